#!/usr/bin/env node
// `npx fieldchart …` runs the TypeScript sources directly: no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
