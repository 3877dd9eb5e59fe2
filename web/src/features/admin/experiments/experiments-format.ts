// The experiments' figures as the page writes them: rates with one decimal ("12.3 %"), money in
// dollars from cents ("$1.23"), a loss in the goal's unit (percentage points or dollars).
import { formatCents as formatDollars, formatCount } from '../format';
import { FUNNEL_NAMES, type Metric, type Scope, type Srm, type Status } from './experiments-api';

/** Keeps a number and its unit on one line. */
const NBSP = '\u00a0';

/** A number as written, with its noun in the singular or the plural: "1 day", "2 days", "1,200 visitors". */
export function plural(count: number, one: string, many = `${one}s`): string {
  return `${formatCount(count)} ${count === 1 ? one : many}`;
}

/** Whether a number as written is zero ("0.00", "$0.000", "0.0"): then it takes no minus sign. */
function writtenZero(text: string): boolean {
  return !/[1-9]/.test(text);
}

/**
 * The sign before a number written as `text` (without its own sign): none for zero, negative zero
 * (-0.0) and a small negative number that rounds to zero included, so that "-0.00" is never shown.
 */
function signOf(value: number, text: string, signed: boolean, minus = '−'): string {
  if (writtenZero(text) || Number.isNaN(value)) return '';
  if (value < 0) return minus;
  return signed && value > 0 ? '+' : '';
}

/** 0.973 -> "97.3 %"; a dash for no rate. */
export function formatPercent(fraction: number | null | undefined): string {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return '–';
  const text = (Math.abs(fraction) * 100).toFixed(1);
  return `${signOf(fraction, text, false, '-')}${text}${NBSP}%`;
}

/** A share as set: 0.5 -> "50 %", 1/3 -> "33.3 %". */
export function formatShare(fraction: number): string {
  const text = (Math.abs(fraction) * 100).toFixed(1).replace(/\.0$/, '');
  return `${signOf(fraction, text, false, '-')}${text}${NBSP}%`;
}

/** 0.0004 -> "0.04 pp": a difference between two rates, in percentage points. */
export function formatPoints(fraction: number, signed = false): string {
  const text = (Math.abs(fraction) * 100).toFixed(2);
  return `${signOf(fraction, text, signed)}${text}${NBSP}pp`;
}

const smallDollars = new Intl.NumberFormat('en-US', {
  style: 'currency',
  currency: 'USD',
  minimumFractionDigits: 2,
  maximumFractionDigits: 3,
});

/** Cents as dollars, a fraction of a cent kept: 0.4 -> "$0.004". */
export function formatSmallCents(cents: number, signed = false): string {
  const text = smallDollars.format(Math.abs(cents) / 100);
  return `${signOf(cents, text, signed)}${text}`;
}

/** Cents as dollars: -150 -> "-$1.50"; never "-$0.00" (negative zero, or less than half a cent below it). */
export function formatCents(cents: number): string {
  const text = formatDollars(Math.abs(cents));
  return `${signOf(cents, text, false, '-')}${text}`;
}

export { formatCount };

/** An expected loss in the metric's unit: percentage points of the rate, or dollars per visitor. */
export function formatLoss(metric: Metric, value: number): string {
  return metric === 'trial_paid' ? formatPoints(value) : `${formatSmallCents(value)} per visitor`;
}

/** A difference against the control, signed, in the metric's unit. */
export function formatDifference(metric: Metric, value: number): string {
  return metric === 'trial_paid' ? formatPoints(value, true) : formatSmallCents(value, true);
}

/** 0.0003 -> "p = 0.0003"; tiny ones as "p < 0.0001". */
export function formatP(value: number): string {
  if (value < 0.0001) return 'p < 0.0001';
  return `p = ${Number(value.toPrecision(2))}`;
}

export const METRIC_NAMES: Record<Metric, string> = {
  trial_paid: 'Trial paid',
  revenue: 'Net revenue per visitor',
};

export const STATUS_NAMES: Record<Status, string> = {
  draft: 'Draft',
  running: 'Running',
  paused: 'Paused',
  stopped: 'Stopped',
  archived: 'Archived',
};

/** "Chat funnel (/chat-help): campaigns 123, 456; keywords printer" or "every visitor". */
export function scopeSummary(scope: Scope): string {
  const funnel = FUNNEL_NAMES[scope.funnel] ?? scope.funnel;
  const parts: string[] = [];
  if (scope.campaigns.length > 0) {
    parts.push(`${scope.campaigns.length === 1 ? 'campaign' : 'campaigns'} ${scope.campaigns.join(', ')}`);
  }
  if (scope.keywords.length > 0) {
    parts.push(`${scope.keywords.length === 1 ? 'keyword' : 'keywords'} ${scope.keywords.join(', ')}`);
  }
  return parts.length === 0 ? `${funnel}: every visitor` : `${funnel}: ${parts.join('; ')}`;
}

/**
 * "Sample ratio mismatch: the arms got 52.1 % / 47.9 % of visitors where 50 % / 50 % was set
 * (p = 0.0003). Check redirects and bots before trusting the result."
 */
export function srmSentence(srm: Srm): string {
  const observed = srm.observedShares.map(formatPercent).join(' / ');
  const expected = srm.expectedShares.map(formatShare).join(' / ');
  return (
    `Sample ratio mismatch: the arms got ${observed} of visitors where ${expected} was set ` +
    `(${formatP(srm.pValue)}). Check redirects and bots before trusting the result.`
  );
}

/** How long "less than a day", "1 day", "9 days" is said. */
function days(count: number): string {
  return count <= 0 ? 'less than a day' : plural(count, 'day');
}

/**
 * How long the experiment has run, as the figures' line says it: "Running for less than a day",
 * "Running for 1 day", "Ran for 9 days" (stopped), "Paused, started 3 days ago", "Never started".
 */
export function runningSentence(daysRunning: number, status: Status, started: boolean): string {
  if (!started) return 'Never started';
  if (status === 'stopped' || status === 'archived') return `Ran for ${days(daysRunning)}`;
  if (status === 'paused') {
    return daysRunning <= 0 ? 'Paused, started less than a day ago' : `Paused, started ${days(daysRunning)} ago`;
  }
  return `Running for ${days(daysRunning)}`;
}
