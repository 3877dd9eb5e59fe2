import { ApiError } from '../../lib/api';

// The server's texts (spec section 5), shown before sending so nobody waits for a refusal.
export const NAME_REQUIRED = 'Please give the task a name.';
export const ITEMS_REQUIRED = 'Please add at least one item.';
export const ITEM_REQUIRED = 'Please type the item first.';

export const EMPTY_TEXT = 'No tasks yet. Create one to keep track of what you need to do.';
export const GENERIC_FAILURE = 'Something went wrong. Please check your connection and try again.';

export type NewTaskCheck =
  | { ok: true; name: string; items: string[] }
  | { ok: false; field: 'name' | 'items'; message: string };

/**
 * The item rows after one was typed into: the form always keeps an empty row at the end, so
 * typing into the last one adds the next.
 */
export function rowsAfterTyping(rows: string[], index: number, text: string): string[] {
  const next = rows.map((row, position) => (position === index ? text : row));
  return index === rows.length - 1 && text.trim() !== '' ? [...next, ''] : next;
}

/** Blank rows are dropped (the trailing empty row is always one); a task needs a name and one item. */
export function checkNewTask(name: string, rows: string[]): NewTaskCheck {
  const trimmedName = name.trim();
  if (trimmedName === '') return { ok: false, field: 'name', message: NAME_REQUIRED };
  const items = rows.map((row) => row.trim()).filter((row) => row !== '');
  if (items.length === 0) return { ok: false, field: 'items', message: ITEMS_REQUIRED };
  return { ok: true, name: trimmedName, items };
}

/** The text of an item to add, or null when it is blank. */
export function checkItem(text: string): string | null {
  const trimmed = text.trim();
  return trimmed === '' ? null : trimmed;
}

/** Only the server's own refusals carry a text meant for people; time-outs and bare statuses do not. */
export function failureText(cause: unknown): string {
  return cause instanceof ApiError && cause.status > 0 && cause.code !== 'http_error' ? cause.message : GENERIC_FAILURE;
}
