/**
 * Turns a row of the endpoint table plus a method's arguments into one transport call, and
 * the validated body into what the method returns (`data`, a page, or the message). The area
 * modules (areas/*.ts) are thin: they only decide each method's signature.
 */
import type * as z from 'zod';
import type { EndpointSpec } from './endpoints.ts';
import type { AuthWriteOptions, MessageResult, Page } from './options.ts';
import type { BinaryResult, HttpMethod, QueryValues, Transport } from './transport.ts';

/** `'a' | 'b'` for `'/x/:a/y/:b'`; `never` without parameters. */
export type ParamNames<P extends string> = P extends `${string}:${infer N}/${infer Rest}`
  ? N | ParamNames<`/${Rest}`>
  : P extends `${string}:${infer N}`
    ? N
    : never;

/** What a call carries besides its options: path parameters (typed by the path), query, body. */
export type CallArgs<P extends string> = { readonly query?: QueryValues | undefined; readonly body?: unknown } & ([ParamNames<P>] extends [never]
  ? { readonly params?: undefined }
  : { readonly params: Readonly<Record<ParamNames<P>, string>> });

/**
 * Fills `:name` segments with the encoded values. An empty value or a dot segment would make
 * the URL name another route (URL parsing resolves `..`), so it is refused before sending.
 */
export function fillPath(path: string, params: Readonly<Record<string, string>> | undefined): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => {
    const value = params?.[name];
    if (typeof value !== 'string' || value === '' || value === '.' || value === '..') {
      throw new TypeError(`${path}: path parameter "${name}" must be a non-empty string other than "." or ".."`);
    }
    return encodeURIComponent(value);
  });
}

type DataEndpoint = EndpointSpec<HttpMethod, string, 'data', z.ZodType<{ data: unknown }>>;
type PageEndpoint = EndpointSpec<HttpMethod, string, 'page', z.ZodType<{ data: unknown[]; meta: Page<unknown>['meta'] }>>;
type MessageEndpoint = EndpointSpec<HttpMethod, string, 'message', z.ZodType<{ message: string }>>;
type BinaryEndpoint = EndpointSpec<HttpMethod, string, 'binary'>;

export function createInvoker(transport: Transport) {
  const send = <E extends EndpointSpec>(ep: E, args: CallArgs<E['path']>, o: AuthWriteOptions | undefined) =>
    transport.send({
      method: ep.method,
      path: fillPath(ep.path, args.params),
      query: args.query,
      body: args.body,
      auth: ep.auth,
      response: ep.response as E['response'],
      // Only POST and PUT are idempotent by key (the server ignores the header elsewhere).
      idempotencyKey: ep.method === 'POST' || ep.method === 'PUT' ? o?.idempotencyKey : undefined,
      token: ep.auth ? o?.token : undefined,
      signal: o?.signal,
    });

  return {
    /** Endpoints answering `{status, data}`: resolves to `data`. */
    async data<E extends DataEndpoint>(ep: E, args: CallArgs<E['path']>, o?: AuthWriteOptions): Promise<z.output<E['response']>['data']> {
      return (await send(ep, args, o)).data;
    },
    /** Paginated lists: resolves to `{data, meta}`. */
    async page<E extends PageEndpoint>(ep: E, args: CallArgs<E['path']>, o?: AuthWriteOptions): Promise<Page<z.output<E['response']>['data'][number]>> {
      const body = await send(ep, args, o);
      return { data: body.data, meta: body.meta };
    },
    /** Endpoints answering bytes (downloads): resolves to the bytes and their headers. */
    async binary<E extends BinaryEndpoint>(ep: E, args: CallArgs<E['path']> & { headers?: Record<string, string> }, o?: AuthWriteOptions): Promise<BinaryResult> {
      return transport.sendBinary({
        method: ep.method,
        path: fillPath(ep.path, args.params),
        query: args.query,
        auth: ep.auth,
        response: ep.response,
        headers: args.headers,
        token: ep.auth ? o?.token : undefined,
        signal: o?.signal,
      });
    },
    /** Endpoints answering `{status, message}`: resolves to `{message}`. */
    async message<E extends MessageEndpoint>(ep: E, args: CallArgs<E['path']>, o?: AuthWriteOptions): Promise<MessageResult> {
      return { message: (await send(ep, args, o)).message };
    },
  };
}

export type Invoker = ReturnType<typeof createInvoker>;
