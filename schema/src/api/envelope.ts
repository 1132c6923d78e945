import * as z from 'zod';

/** `{"status": true, "data": …}` — the contract's success body. */
export function envelope<T extends z.ZodType>(data: T) {
  return z.object({ status: z.literal(true), data, message: z.string().optional() });
}

export const paginationMeta = z.object({
  current_page: z.number().int(),
  per_page: z.number().int(),
  total: z.number().int(),
  last_page: z.number().int(),
});

export function paginated<T extends z.ZodType>(item: T) {
  return z.object({ status: z.literal(true), data: z.array(item), meta: paginationMeta, message: z.string().optional() });
}

/** Endpoints with no response fields answer `{"status": true, "message": "…"}`. */
export const messageOnly = z.object({ status: z.literal(true), message: z.string() });

export const errorBody = z
  .object({
    status: z.literal(false),
    message: z.string(),
    code: z.string(),
    errors: z.record(z.string(), z.array(z.string())).optional(),
  })
  .meta({ id: 'Error' });

export type ErrorBody = z.infer<typeof errorBody>;
