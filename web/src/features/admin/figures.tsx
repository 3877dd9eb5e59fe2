// What the dashboard's figures carry besides their value: a mark when they cannot be final yet,
// and their change from the previous period.
import type { Pending } from './api';
import { addDays, change, formatDay, isDayKey } from './format';
import type { StepKey } from './format';

export type MarkDef = { symbol: string; words: string };

/** `symbol` for the eye, `words` for a screen reader ("First month paid, not final"). */
export function Mark({ symbol, words }: MarkDef) {
  return (
    <>
      <span className="admin-mark" aria-hidden="true">
        {symbol}
      </span>
      <span className="admin-sr-only">, {words}</span>
    </>
  );
}

/** "First month paid": trials of the last days are not due yet. */
export const PAID_MARK: MarkDef = { symbol: '*', words: 'not final' };
/** "Subscribed after 30 days": the last 30-odd days' visitors have not had their 30 days. */
export const RETAINED_MARK: MarkDef = { symbol: '†', words: 'not final' };

/** The mark of a step's column or tile when some of its figures can still grow. */
export function stepMark(step: StepKey, pending: Pending | undefined): MarkDef | undefined {
  if (step === 'paid' && pending?.paid_from) return PAID_MARK;
  if (step === 'retained' && pending?.retained_from) return RETAINED_MARK;
  return undefined;
}

/**
 * The mark of a day's (or a week's, by its Monday) figure of `step` when that day is one whose
 * figure can still grow.
 */
export function rowMark(step: StepKey, key: string, by: string, pending: Pending | undefined): MarkDef | undefined {
  const from = step === 'paid' ? pending?.paid_from : step === 'retained' ? pending?.retained_from : null;
  if (!from || (by !== 'day' && by !== 'week') || !isDayKey(key)) return undefined;
  const last = by === 'week' ? addDays(key, 6) : key;
  return last >= from ? stepMark(step, pending) : undefined;
}

/** What the marks mean, under what they mark. */
export function PendingNotes({ pending }: { pending: Pending | undefined }) {
  if (!pending?.paid_from && !pending?.retained_from) return null;
  return (
    <ul className="admin-notes">
      {pending.paid_from && (
        <li>
          <span aria-hidden="true">{PAID_MARK.symbol} </span>First month paid: not final. Trials of visitors from{' '}
          {formatDay(pending.paid_from)} on are not due yet.
        </li>
      )}
      {pending.retained_from && (
        <li>
          <span aria-hidden="true">{RETAINED_MARK.symbol} </span>Subscribed after 30 days: not final. Visitors from{' '}
          {formatDay(pending.retained_from)} on have not had their 30 days yet.
        </li>
      )}
    </ul>
  );
}

/**
 * A figure's change from the previous period: an arrow and the change in percent (or the
 * difference, from zero), `was` adding the previous figure; a screen reader hears it in words.
 */
export function ChangeNote({
  now,
  before,
  format,
  was = false,
  difference,
}: {
  now: number;
  before: number;
  format: (value: number) => string;
  /** Says the change as the difference in these terms (a rate's points), not in percent. */
  difference?: (value: number) => string;
  /** Adds the previous figure (the tiles; a table's cells are too narrow). */
  was?: boolean;
}) {
  const { text: said, direction, words } = change(now, before, format, difference);
  const text = direction === 'same' && !was ? '±0' : said;
  const arrow = direction === 'up' ? '▲' : direction === 'down' ? '▼' : '=';
  return (
    <span className={`admin-change admin-change--${direction}`}>
      <span aria-hidden="true">
        {arrow} {text}
        {was && direction !== 'same' ? ` (was ${format(before)})` : ''}
      </span>
      <span className="admin-sr-only">{words}</span>
    </span>
  );
}
