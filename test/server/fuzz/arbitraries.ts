/**
 * fast-check generators driven by JSON Schema (the OpenAPI document's, or `z.toJSONSchema` of a
 * zod schema): values that mostly follow the schema, so requests reach the services, mixed
 * with the hostile ones issue 9 found — wrong types, huge and unicode strings with NUL and
 * lone surrogates, dates outside PostgreSQL's range, extreme numbers, foreign and malformed
 * ids. Shared by the REST fuzz suite and usable by the sync fuzzing (same schemas).
 */
import fc from 'fast-check';

export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  format?: string;
  pattern?: string;
};

/**
 * How hostile a generated value is: 0 conforms to the schema (reaches the service), 1 now and
 * then breaks a member, 2 breaks about half of them. One level per request, so that a single
 * bad member in an otherwise valid body (the case issue 9 found) is common.
 */
export type Hostility = 0 | 1 | 2;

export interface Ctx {
  readonly ids: IdPool;
  readonly resolve: (s: JsonSchema) => JsonSchema;
  readonly hostility: Hostility;
}

/** Weights [conforming, hostile] at each level. */
const MIX: Record<Hostility, [number, number]> = { 0: [1, 0], 1: [5, 1], 2: [1, 2] };

function mix<T>(ctx: Ctx, good: fc.Arbitrary<T>, bad: fc.Arbitrary<T>): fc.Arbitrary<T> {
  const [g, b] = MIX[ctx.hostility];
  return b === 0 ? good : fc.oneof({ weight: g, arbitrary: good }, { weight: b, arbitrary: bad });
}

export interface IdPool {
  /** Ids the fuzzing tenant owns, and ids of the other tenant (the attack). */
  readonly own: readonly string[];
  readonly foreign: readonly string[];
}

/** Strings that broke, or could break, a server: NUL, lone surrogates, huge, odd unicode. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  // A NUL or a lone surrogate inside an otherwise ordinary value: what PostgreSQL refuses.
  {
    weight: 4,
    arbitrary: fc
      .tuple(fc.string({ minLength: 1, maxLength: 10 }), fc.constantFrom('\u0000', '\u0000', '\uD83D', '\uDE00'), fc.string({ maxLength: 10 }))
      .map(([x, bad, y]) => x + bad + y),
  },
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\uD800',
    'x\uDC00y',
    '\uDBFF\uDBFF',
    '😀'.repeat(50),
    '\u202E\u0301\uFEFF\u200B',
    "'; drop table users; --",
    '%00%ff',
    '__proto__',
    'constructor',
    '../../etc/passwd',
    '',
    ' ',
    '\t\n\r',
    'null',
    'NaN',
    '0000-01-01',
    '9999-12-31T23:59:59-23:59',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.integer({ min: 200, max: 70_000 }).map((n) => 'x'.repeat(n)),
);

export const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(0, -0, -1, 1e308, -1e308, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2 ** 31, -(2 ** 31) - 1, 2 ** 63, 0.1, 1e-300, 32768, 65536),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);

/** Any JSON value: the wrong type for whatever was expected. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { maxDepth: 2 },
  fc.constant(null),
  fc.boolean(),
  hostileNumber,
  hostileString,
  fc.array(fc.oneof(fc.integer(), fc.string({ maxLength: 5 })), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.integer(), fc.string({ maxLength: 5 })), { maxKeys: 3 }),
);

const dateIn = (min: number, max: number) => fc.integer({ min, max }).map((ms) => new Date(ms));
const CLINICAL = { min: Date.UTC(1900, 0, 1), max: Date.UTC(2100, 11, 31, 23, 59, 59) };
const NEAR = { min: Date.UTC(2025, 0, 1), max: Date.UTC(2027, 11, 31) };

export const dateString: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: dateIn(NEAR.min, NEAR.max).map((d) => d.toISOString().slice(0, 10)) },
  { weight: 2, arbitrary: dateIn(CLINICAL.min, CLINICAL.max).map((d) => d.toISOString().slice(0, 10)) },
  { weight: 2, arbitrary: fc.constantFrom('1900-01-01', '2100-12-31', '0000-01-01', '9999-12-31', '0001-01-05', '2026-02-30', '2026-13-01', '1899-12-31', '2101-01-01', '20260101', '2026-1-1') },
);

export const dateTimeString: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: dateIn(NEAR.min, NEAR.max).map((d) => d.toISOString()) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(dateIn(CLINICAL.min, CLINICAL.max), fc.constantFrom('Z', '+14:00', '-12:00', '+05:30', '-23:59', '+24:00', '', '+14:01'))
      .map(([d, off]) => d.toISOString().slice(0, 19) + off),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom('0000-01-01T00:00:00Z', '9999-12-31T23:59:59-23:59', '2026-02-30T10:00:00Z', '1900-01-01T00:00:00+01:00', '2100-12-31T23:59:59Z', '2026-06-01', 'yesterday'),
  },
);

function stringFor(schema: JsonSchema, ctx: Ctx): fc.Arbitrary<string> {
  const { ids } = ctx;
  const valid: fc.Arbitrary<string>[] = [];
  if (schema.format === 'uuid') {
    valid.push(fc.constantFrom(...ids.own), fc.constantFrom(...ids.foreign), fc.uuid());
  } else if (schema.format === 'date') valid.push(dateString);
  else if (schema.format === 'date-time') valid.push(dateTimeString);
  else if (schema.format === 'email') valid.push(fc.emailAddress(), fc.constant('someone@example.test'));
  else if (schema.pattern) {
    try {
      valid.push(fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= (schema.maxLength ?? 500)));
    } catch {
      // A pattern fast-check cannot generate from: plain strings then.
    }
  }
  if (valid.length === 0) {
    const min = schema.minLength ?? 0;
    const max = Math.max(min, Math.min(schema.maxLength ?? 60, 60));
    valid.push(fc.string({ minLength: min, maxLength: max }), fc.string({ unit: 'grapheme', minLength: min, maxLength: max }));
  }
  return mix(ctx, fc.oneof(...valid), hostileString);
}

function numberFor(schema: JsonSchema, integer: boolean, ctx: Ctx): fc.Arbitrary<number> {
  const min = schema.minimum ?? schema.exclusiveMinimum ?? -1000;
  const max = schema.maximum ?? schema.exclusiveMaximum ?? 1000;
  const inRange = integer
    ? fc.integer({ min: Math.ceil(Math.max(min, -1e9)), max: Math.floor(Math.min(max, 1e9)) })
    : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
  return mix(ctx, inRange, hostileNumber);
}

/** Resolves `$ref`s against `components.schemas`. */
export function resolver(components: Record<string, JsonSchema>) {
  return (schema: JsonSchema): JsonSchema => {
    let s = schema;
    for (let i = 0; s.$ref && i < 10; i++) s = components[decodeURIComponent(s.$ref.replace('#/components/schemas/', ''))] ?? {};
    return s;
  };
}

/**
 * A value for `schema`: mostly conforming, sometimes not (wrong type, missing required member,
 * an extra member, hostile strings and numbers) — `depth` bounds recursion.
 */
export function valueFor(schema: JsonSchema, ctx: Ctx, depth = 0): fc.Arbitrary<unknown> {
  const s = ctx.resolve(schema);
  // Wrong types are rarer than wrong values: most clients get the shape right.
  return ctx.hostility === 0 ? conformingFor(s, ctx, depth) : fc.oneof({ weight: 8, arbitrary: conformingFor(s, ctx, depth) }, { weight: ctx.hostility, arbitrary: anyJson });
}

function conformingFor(s: JsonSchema, ctx: Ctx, depth: number): fc.Arbitrary<unknown> {
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return mix(ctx, fc.constantFrom(...s.enum), hostileString);
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives?.length) return fc.oneof(...alternatives.map((a) => valueFor(a, ctx, depth + 1)));
  if (s.allOf?.length) return valueFor(s.allOf[0] ?? {}, ctx, depth + 1);
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : s.properties ? ['object'] : [];
  if (types.length === 0) return anyJson;
  return fc.oneof(...types.map((t) => typed(t, s, ctx, depth)));
}

function typed(type: string, s: JsonSchema, ctx: Ctx, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return numberFor(s, true, ctx);
    case 'number':
      return numberFor(s, false, ctx);
    case 'string':
      return stringFor(s, ctx);
    case 'array': {
      if (depth > 4) return fc.constant([]);
      const item = valueFor(s.items ?? {}, ctx, depth + 1);
      const max = Math.min(s.maxItems ?? 5, 5);
      return mix(
        ctx,
        fc.array(item, { minLength: Math.min(s.minItems ?? 0, max), maxLength: max }),
        fc.array(item, { minLength: (s.maxItems ?? 5) + 1, maxLength: (s.maxItems ?? 5) + 3 }),
      );
    }
    case 'object':
      return objectFor(s, ctx, depth);
    default:
      return anyJson;
  }
}

function objectFor(s: JsonSchema, ctx: Ctx, depth: number): fc.Arbitrary<unknown> {
  if (depth > 4) return fc.constant({});
  const props = Object.entries(s.properties ?? {});
  const required = new Set(s.required ?? []);
  const clean: Ctx = { ...ctx, hostility: 0 };
  const wild: Ctx = { ...ctx, hostility: 2 };
  const members = (bad: (i: number) => boolean) =>
    props.map(([key, schema], i) =>
      fc.tuple(
        fc.constant(key),
        valueFor(schema, ctx.hostility === 1 ? (bad(i) ? wild : clean) : ctx, depth + 1),
        // Required members are there unless hostile (or the one chosen), optional ones half the time.
        fc.integer({ min: 0, max: 19 }).map((n) => (required.has(key) ? n >= ctx.hostility || !bad(i) : bad(i) || n >= 10)),
      ),
    );
  // Level 1: exactly one member is hostile and the rest valid — the body issue 9 found (one
  // NUL in an otherwise good form), which must be refused on its own merits.
  const chosen: fc.Arbitrary<Array<[string, unknown, boolean]>> =
    ctx.hostility === 1 && props.length > 0
      ? fc.nat(props.length - 1).chain((k) => fc.tuple(...members((i) => i === k)))
      : fc.tuple(...members(() => ctx.hostility === 2));
  const extra = typeof s.additionalProperties === 'object' ? valueFor(s.additionalProperties, ctx, depth + 1) : anyJson;
  const extras = ctx.hostility === 0 ? fc.constant([]) : fc.array(fc.tuple(fc.oneof(fc.string({ maxLength: 12 }), hostileString), extra), { maxLength: 2 });
  return fc.tuple(chosen, extras).map(([picked, more]) => {
    // defineProperty: a member called `__proto__` stays a member and reaches the wire.
    const out: Record<string, unknown> = {};
    const put = (key: string, value: unknown) => Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    for (const [key, value, present] of picked) if (present) put(key, value);
    for (const [key, value] of more) if (!Object.hasOwn(out, key)) put(key, value);
    return out;
  });
}

/** Percent-encodes for a URL, lone surrogates as the (invalid UTF-8) bytes a careless client sends. */
export function encodeLoose(value: string): string {
  let out = '';
  for (const ch of value) {
    const code = ch.codePointAt(0) ?? 0;
    out += code >= 0xd800 && code <= 0xdfff ? '%ED%A0%80' : encodeURIComponent(ch);
  }
  return out;
}

/** Path parameter values, already encoded for the URL: own, foreign, unknown and malformed ids. */
export function pathValue(ids: IdPool, hostility: Hostility = 2): fc.Arbitrary<string> {
  const known = fc.oneof(fc.constantFrom(...ids.own), fc.constantFrom(...ids.foreign), fc.uuid());
  if (hostility === 0) return known;
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...ids.own) },
    { weight: 3, arbitrary: fc.constantFrom(...ids.foreign) },
    { weight: 1, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: hostileString.filter((s) => s.length > 0 && s.length < 5000).map(encodeLoose) },
    // Raw: malformed percent-encoding, overlong, the nil uuid.
    { weight: 1, arbitrary: fc.constantFrom('%00', '%ZZ', '%E0%A4%A', 'x'.repeat(101), 'x'.repeat(3000), '00000000-0000-0000-0000-000000000000', 'NULL') },
  );
}
