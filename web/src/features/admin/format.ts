import type { By, Figures } from './api';

/** The funnels by their names on the dashboard, with the pages they start on. */
export const FUNNEL_NAMES: Record<string, string> = {
  chat_funnel: 'Chat funnel (/chat-help)',
  refundable_fee_funnel: 'Refundable-fee chat (/Chat-Help-2)',
  help_funnel: 'Help form (/get-help)',
  direct_signup: 'Direct sign-up (/landing)',
  chat_trial_prompt: "Members' trial prompt",
};

export function funnelName(funnel: string): string {
  return FUNNEL_NAMES[funnel] ?? funnel;
}

export const BY_NAMES: Record<By, string> = {
  campaign: 'Campaign',
  keyword: 'Keyword',
  utm_source: 'UTM source',
  utm_medium: 'UTM medium',
  utm_campaign: 'UTM campaign',
  day: 'Day',
  week: 'Week',
};

/** What a breakdown's rows are, in the plural ("Search keywords", "3 of 40 keywords match"). */
export const BY_PLURALS: Record<By, string> = {
  campaign: 'campaigns',
  keyword: 'keywords',
  utm_source: 'UTM sources',
  utm_medium: 'UTM mediums',
  utm_campaign: 'UTM campaigns',
  day: 'days',
  week: 'weeks',
};

/** The funnel's steps in order, as the tables' columns name them. */
export const STEPS = [
  ['visitors', 'Visitors'],
  ['first_message', 'First message'],
  ['final_message', 'Final message'],
  ['checkout', 'Checkout started'],
  ['trial', 'Trial started'],
  ['paid', 'First month paid'],
  ['retained', 'Subscribed after 30 days'],
] as const satisfies ReadonlyArray<readonly [keyof Figures, string]>;

export type StepKey = (typeof STEPS)[number][0];

const count = new Intl.NumberFormat('en-US');
const dollars = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });

export function formatCount(value: number): string {
  return count.format(value);
}

export function formatCents(cents: number): string {
  return dollars.format(cents / 100);
}

/** `part` of `whole` as a percentage with one decimal, or a dash when there is no whole. */
export function formatRate(part: number, whole: number): string {
  if (whole <= 0) return '–';
  return `${((part / whole) * 100).toFixed(1)}%`;
}

/** A breakdown key as shown: the journeys that had none of it are '(none)'. */
export function keyLabel(key: string, by: By): string {
  if (key === '') return '(none)';
  return by === 'week' ? `Week of ${key}` : key;
}

/** A date as the range inputs hold it (UTC), `days` before today. */
export function dayKey(daysAgo: number, now: Date = new Date()): string {
  const day = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - daysAgo));
  return day.toISOString().slice(0, 10);
}

const DAY_MS = 86_400_000;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** Whether `value` is a day as the range inputs hold it (YYYY-MM-DD, a real date). */
export function isDayKey(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const time = Date.parse(`${value}T00:00:00Z`);
  return Number.isFinite(time) && new Date(time).toISOString().slice(0, 10) === value;
}

/** The day `days` after `key` (before, when negative). */
export function addDays(key: string, days: number): string {
  return new Date(Date.parse(`${key}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

/** How many days from `from` to `to`, both counted. */
export function daysIn(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS) + 1;
}

/** The range of the same length just before `from`–`to`. */
export function previousPeriod(from: string, to: string): { from: string; to: string } {
  return { from: addDays(from, -daysIn(from, to)), to: addDays(from, -1) };
}

/** "20 Nov 2026" (built by hand: browsers differ on short month names, "Sep" or "Sept"). */
export function formatDay(key: string): string {
  const [year, month, day] = key.split('-').map(Number);
  return `${day} ${MONTHS[month - 1]} ${year}`;
}

/** "1–30 Nov 2026 (30 days)", "28 Oct – 3 Nov 2026 (7 days)", "20 Nov 2026 (1 day)". */
export function formatRange(from: string, to: string): string {
  const days = daysIn(from, to);
  const length = `(${formatCount(days)} ${days === 1 ? 'day' : 'days'})`;
  if (from === to) return `${formatDay(from)} ${length}`;
  const [fromYear, fromMonth, fromDay] = from.split('-').map(Number);
  const [toYear, toMonth] = to.split('-').map(Number);
  let start = formatDay(from);
  if (fromYear === toYear) start = fromMonth === toMonth ? `${fromDay}` : `${fromDay} ${MONTHS[fromMonth - 1]}`;
  const joint = fromYear === toYear && fromMonth === toMonth ? '–' : ' – ';
  return `${start}${joint}${formatDay(to)} ${length}`;
}

/** Return on ad spend as a multiple: "2.35×"; a dash without a cost. */
export function formatRoas(roas: number | null | undefined): string {
  return roas === null || roas === undefined ? '–' : `${roas.toFixed(2)}×`;
}

/** Cents, or a dash when there is nothing to divide by (no visitors, no trials). */
export function formatCentsOrDash(cents: number | null | undefined): string {
  return cents === null || cents === undefined ? '–' : formatCents(cents);
}

export type Change = { text: string; direction: 'up' | 'down' | 'same'; words: string };

/**
 * A figure's change from the previous period: in percent when the previous one was above zero,
 * else the difference itself ("+$12.00", "+3"); a rate's always as the difference (`difference`
 * says it: "+0.8 points"). `words` says it for screen readers.
 */
export function change(
  now: number,
  before: number,
  format: (value: number) => string,
  difference?: (value: number) => string,
): Change {
  const was = `was ${format(before)}`;
  if (now === before) return { text: 'No change', direction: 'same', words: `no change from the previous period (${was})` };
  const direction = now > before ? 'up' : 'down';
  const sign = direction === 'up' ? '+' : '−';
  let text = `${sign}${format(Math.abs(now - before))}`;
  if (difference) text = `${sign}${difference(Math.abs(now - before))}`;
  else if (before > 0) text = `${sign}${((Math.abs(now - before) / before) * 100).toFixed(1)}%`;
  return { text, direction, words: `${direction} ${text.slice(1)} from the previous period (${was})` };
}
