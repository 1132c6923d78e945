/**
 * Responses are written by fast-json-stringify (what Fastify compiles from a route's JSON
 * schema) instead of a zod parse per response. The zod schemas stay the one source: each
 * route's response schema is turned into JSON schema once, when the route is compiled.
 *
 * With `check` (NODE_ENV=test), every response is also run through the zod schema as before
 * and the two outputs compared, so the whole test suite checks both that handlers answer
 * what their schemas say and that the compiled serializer writes exactly what zod would.
 */
import { isDeepStrictEqual } from 'node:util';
import fastJson from 'fast-json-stringify';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';

type JsonSchema = { [key: string]: unknown };
type Route = Parameters<typeof zodSerializerCompiler>[0];
type Serialize = (data: unknown) => string;

const isObject = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * zod writes `nullable()` as `anyOf: [X, {type: 'null'}]`; fast-json-stringify answers an
 * anyOf by validating the value against each branch at run time. `type: [X's type, 'null']`
 * says the same and is compiled to a null check.
 */
function withNullableTypes(node: unknown, definitions: Record<string, JsonSchema>): unknown {
  if (Array.isArray(node)) return node.map((n) => withNullableTypes(n, definitions));
  if (!isObject(node)) return node;
  const out: JsonSchema = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, withNullableTypes(v, definitions)]));
  const branches = out.anyOf;
  if (Array.isArray(branches) && branches.length === 2) {
    const nullIndex = branches.findIndex((b) => isObject(b) && b.type === 'null' && Object.keys(b).length === 1);
    const other = branches[1 - nullIndex];
    if (nullIndex >= 0 && isObject(other)) {
      const ref = typeof other.$ref === 'string' ? /^#\/definitions\/(.+)$/.exec(other.$ref)?.[1] : undefined;
      const target = ref !== undefined ? definitions[decodeURIComponent(ref)] : other;
      if (isObject(target) && typeof target.type === 'string') {
        const { anyOf: _anyOf, ...rest } = out;
        return { ...target, ...rest, type: [target.type, 'null'] };
      }
    }
  }
  return out;
}

/** The compiled serializer of a zod schema, or null when its JSON schema cannot be compiled. */
export function compileResponseSchema(schema: z.ZodType): Serialize | null {
  try {
    const json = z.toJSONSchema(schema, { target: 'draft-7', io: 'output', unrepresentable: 'any' }) as JsonSchema;
    const definitions = (json.definitions ?? {}) as Record<string, JsonSchema>;
    const resolved = withNullableTypes({ ...json, definitions: withNullableTypes(definitions, definitions) }, definitions) as JsonSchema;
    delete resolved.$schema;
    return fastJson(resolved) as Serialize;
  } catch {
    return null;
  }
}

export function responseSerializerCompiler(opts: { check: boolean }) {
  // Fastify asks for a serializer per route and status at boot; most share a schema (every
  // error status is the one error body), and many are never answered: each schema is
  // compiled once, on its first response, so boot does not pay for them.
  const cache = new WeakMap<z.ZodType, Serialize | null>();
  const compiledFor = (schema: z.ZodType): Serialize | null => {
    let compiled = cache.get(schema);
    if (compiled === undefined) {
      compiled = compileResponseSchema(schema);
      cache.set(schema, compiled);
    }
    return compiled;
  };
  return (route: Route): Serialize => {
    const viaZod = zodSerializerCompiler(route) as Serialize;
    const schema = route.schema;
    // A schema fast-json-stringify cannot take keeps the zod serializer.
    if (!(schema instanceof z.ZodType)) return viaZod;
    if (!opts.check) return (data) => (compiledFor(schema) ?? viaZod)(data);
    return (data) => {
      const compiled = compiledFor(schema);
      if (!compiled) return viaZod(data);
      const expected = viaZod(data);
      const actual = compiled(data);
      if (!isDeepStrictEqual(JSON.parse(actual), JSON.parse(expected))) {
        throw new Error(`compiled response serializer of ${route.method} ${route.url} differs from the zod schema's output:\n${actual}\n${expected}`);
      }
      return actual;
    };
  };
}
