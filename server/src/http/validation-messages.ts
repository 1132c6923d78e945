import { z } from 'zod';

/**
 * Field messages a person can read in the app ("is required" rather than zod's "expected
 * string, received undefined"). Set once for the process: zod's config is global.
 */
z.config({
  customError: (issue) => {
    if (issue.code === 'invalid_type' && issue.input === undefined) return 'is required';
    if (issue.code === 'invalid_type') return `must be ${issue.expected === 'int' ? 'an integer' : `a ${issue.expected}`}`;
    if (issue.code === 'unrecognized_keys') return `unknown field${issue.keys.length > 1 ? 's' : ''}: ${issue.keys.join(', ')}`;
    return undefined;
  },
});
