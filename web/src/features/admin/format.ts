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
