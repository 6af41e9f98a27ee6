import { z } from 'zod';

export const MAX_PAGE_SIZE = 100;

/** Query fields every list takes; `sortBy` is added per resource with its own fields. */
export const pageQueryShape = {
  page: z.coerce.number().int().min(1, 'must be an integer of at least 1').default(1),
  pageSize: z.coerce.number().int().min(1, `must be an integer from 1 to ${MAX_PAGE_SIZE}`).max(MAX_PAGE_SIZE, `must be an integer from 1 to ${MAX_PAGE_SIZE}`).default(20),
  sortOrder: z.enum(['asc', 'desc']).default('desc'),
};

export interface PageQuery {
  page: number;
  pageSize: number;
}

/** `{data, page, pageSize, total, totalPages}` for an item schema. */
export function pageSchema<T extends z.ZodType>(item: T) {
  return z.object({
    data: z.array(item),
    page: z.number().int(),
    pageSize: z.number().int(),
    total: z.number().int(),
    totalPages: z.number().int(),
  });
}

export function toPage<T>(data: T[], total: number, q: PageQuery) {
  return { data, page: q.page, pageSize: q.pageSize, total, totalPages: Math.ceil(total / q.pageSize) };
}

export function offsetOf(q: PageQuery): number {
  return (q.page - 1) * q.pageSize;
}
