// The drop-off's figures as the page shows them, and its filters as the address keeps them
// (/admin/flows?from=…&to=…&funnel=…&flow=…&campaign=…&keyword=…), like the dashboard's.
import { formatCount, formatRate, isDayKey } from '../format';
import { defaultRange } from '../url-state';
import type { DropoffFlow, DropoffQuery, DropoffStep, PreviewFunnel } from './flows-api';

export const STEP_LABELS: Record<string, string> = {
  joined: 'Joined',
  first_message: 'First message',
  first_reply: 'First reply',
  second_message: 'Second message',
  second_reply: 'Second reply',
  third_message: 'Third message',
  final_message: 'Final message',
  checkout: 'Checkout opened',
  trial_paid: 'Trial paid',
  month_paid: 'First month paid',
};

export function stepLabel(step: string): string {
  return STEP_LABELS[step] ?? step.replace(/_/g, ' ');
}

export const DROPOFF_FUNNELS: Record<PreviewFunnel, string> = {
  chat: 'Chat funnel (/chat-help)',
  refundable: 'Refundable-fee chat (/Chat-Help-2)',
};

/** One decimal below 10 ("4.3", "4"), whole numbers above ("45"). */
function amount(value: number): string {
  if (value < 9.95) return String(Math.round(value * 10) / 10);
  return String(Math.round(value));
}

/** A time as "4.3 s", "45 s", "2 min", "5 h", "3 d"; a dash when there is none. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms) || ms < 0) return '–';
  const seconds = ms / 1000;
  if (Math.round(seconds) < 60) return `${amount(seconds)} s`;
  const minutes = seconds / 60;
  if (Math.round(minutes) < 60) return `${amount(minutes)} min`;
  const hours = minutes / 60;
  if (Math.round(hours) < 24) return `${amount(hours)} h`;
  return `${amount(hours / 24)} d`;
}

export type DropoffCell = {
  version: number;
  count: number;
  /** "45.6%" of those who joined; of the step before ("–" for the first step). */
  ofJoined: string;
  ofBefore: string;
  median: string;
  /** The checkout's "button 3 / automatic 2". */
  how: string | null;
};

export type DropoffRow = { step: string; label: string; cells: DropoffCell[] };

/** A flow's versions, oldest first: the columns of its table, side by side. */
export function versionsOf(flow: DropoffFlow): number[] {
  return flow.versions.map((version) => version.version).sort((a, b) => a - b);
}

/** The flow's table: a row per step, a cell per version. */
export function dropoffRows(flow: DropoffFlow, steps: string[]): DropoffRow[] {
  const versions = versionsOf(flow);
  const stepsOf = new Map(
    flow.versions.map((version) => [version.version, new Map(version.steps.map((step) => [step.step, step]))]),
  );
  const figure = (version: number, step: string): DropoffStep | undefined => stepsOf.get(version)?.get(step);
  return steps.map((step, index) => ({
    step,
    label: stepLabel(step),
    cells: versions.map((version) => {
      const here = figure(version, step);
      const count = here?.count ?? 0;
      const joined = figure(version, steps[0])?.count ?? 0;
      const before = index > 0 ? (figure(version, steps[index - 1])?.count ?? 0) : null;
      const how =
        here && (here.button !== undefined || here.automatic !== undefined)
          ? `button ${formatCount(here.button ?? 0)} / automatic ${formatCount(here.automatic ?? 0)}`
          : null;
      return {
        version,
        count,
        ofJoined: formatRate(count, joined),
        ofBefore: before === null ? '–' : formatRate(count, before),
        median: formatDuration(here?.medianMsToNext),
        how,
      };
    }),
  }));
}

function text(params: URLSearchParams, name: string): string | undefined {
  const value = params.get(name)?.trim();
  return value ? value : undefined;
}

/** The drop-off a query asks for; what it lacks or gets wrong is the default (the last 30 days). */
export function readDropoff(params: URLSearchParams, now: Date = new Date()): DropoffQuery {
  const range = defaultRange(now);
  const from = params.get('from') ?? '';
  const to = params.get('to') ?? '';
  const funnel = params.get('funnel');
  const valid = isDayKey(from) && isDayKey(to) && from <= to;
  return {
    from: valid ? from : range.from,
    to: valid ? to : range.to,
    funnel: funnel === 'chat' || funnel === 'refundable' ? funnel : undefined,
    flow: text(params, 'flow'),
    campaign: text(params, 'campaign'),
    keyword: text(params, 'keyword'),
  };
}

/** The address's query with the drop-off's filters replaced (the rest, the flow edited, kept). */
export function writeDropoff(current: URLSearchParams, query: DropoffQuery): URLSearchParams {
  const params = new URLSearchParams(current);
  params.set('from', query.from);
  params.set('to', query.to);
  for (const key of ['funnel', 'flow', 'campaign', 'keyword'] as const) {
    const value = query[key];
    if (value) params.set(key, value);
    else params.delete(key);
  }
  return params;
}
