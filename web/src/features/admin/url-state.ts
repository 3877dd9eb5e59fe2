// What the dashboard shows, kept in the address (/admin?from=…&to=…&by=…): a reload, a shared
// link and the Back button show the same view.
import type { By, ReportQuery } from './api';
import { BY_NAMES, dayKey, isDayKey } from './format';

export type Sort = { key: string; descending: boolean };

export type DashboardState = ReportQuery & {
  /** Also read the previous period of the same length, and show each figure's change. */
  compare: boolean;
  /** Keeps the breakdown's rows whose name holds this (as typed). */
  search: string;
  /** The breakdown's page, from 1. */
  page: number;
  /** The breakdown's order: its own default when none. */
  sort?: Sort;
};

/** The breakdown table's rows a page. */
export const PAGE_SIZE = 50;

/** The last 30 days, by campaign: what /admin shows without a query. */
export function defaultRange(now: Date = new Date()): { from: string; to: string } {
  return { from: dayKey(29, now), to: dayKey(0, now) };
}

function text(params: URLSearchParams, name: string): string | undefined {
  const value = params.get(name)?.trim();
  return value ? value : undefined;
}

/** The view a query asks for; what it lacks or gets wrong is the default. */
export function readState(params: URLSearchParams, now: Date = new Date()): DashboardState {
  const range = defaultRange(now);
  const from = params.get('from') ?? '';
  const to = params.get('to') ?? '';
  const by = params.get('by') ?? '';
  const page = Number(params.get('page'));
  const sort = params.get('sort') ?? '';
  const campaign = text(params, 'campaign');
  return {
    from: isDayKey(from) ? from : range.from,
    to: isDayKey(to) ? to : range.to,
    by: by in BY_NAMES ? (by as By) : 'campaign',
    funnel: text(params, 'funnel'),
    campaign,
    // A keyword is one of a campaign's.
    keyword: campaign ? text(params, 'keyword') : undefined,
    compare: params.get('compare') === '1',
    search: params.get('q') ?? '',
    page: Number.isInteger(page) && page > 1 ? page : 1,
    sort: /^-?[a-z_]+$/.test(sort)
      ? { key: sort.replace(/^-/, ''), descending: sort.startsWith('-') }
      : undefined,
  };
}

/** The query for a view: the range and breakdown always, the rest when not the default. */
export function writeState(state: DashboardState): URLSearchParams {
  const params = new URLSearchParams({ from: state.from, to: state.to, by: state.by });
  if (state.funnel) params.set('funnel', state.funnel);
  if (state.campaign) params.set('campaign', state.campaign);
  if (state.campaign && state.keyword) params.set('keyword', state.keyword);
  if (state.compare) params.set('compare', '1');
  if (state.search) params.set('q', state.search);
  if (state.page > 1) params.set('page', String(state.page));
  if (state.sort) params.set('sort', `${state.sort.descending ? '-' : ''}${state.sort.key}`);
  return params;
}

/** What the server is asked for the view. */
export function reportQuery(state: DashboardState): ReportQuery {
  const { from, to, by, funnel, campaign, keyword } = state;
  return { from, to, by, funnel, campaign, keyword };
}

type Range = { from: string; to: string };

/** The ranges a click shows, in UTC days like the rest of the dashboard. */
export const PRESETS: ReadonlyArray<{ label: string; range: (now: Date) => Range }> = [
  { label: 'Last 7 days', range: (now) => ({ from: dayKey(6, now), to: dayKey(0, now) }) },
  { label: 'Last 30 days', range: (now) => ({ from: dayKey(29, now), to: dayKey(0, now) }) },
  { label: 'Last 90 days', range: (now) => ({ from: dayKey(89, now), to: dayKey(0, now) }) },
  {
    label: 'This month',
    range: (now) => ({ from: dayKey(now.getUTCDate() - 1, now), to: dayKey(0, now) }),
  },
  {
    label: 'Last month',
    range: (now) => {
      const last = dayKey(now.getUTCDate(), now);
      return { from: `${last.slice(0, 8)}01`, to: last };
    },
  },
];
