import { timestamp } from 'drizzle-orm/pg-core';

/** Column helpers shared by the table modules: every timestamp is `timestamptz`, read as a Date. */
export const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
export const createdAt = () => ts('created_at').notNull().defaultNow();
export const updatedAt = () => ts('updated_at').notNull().defaultNow();
