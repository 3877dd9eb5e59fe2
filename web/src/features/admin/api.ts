import { api } from '../../lib/api';

/** A funnel's (or a breakdown row's) figures: counts per step, money in cents. */
export type Figures = {
  visitors: number;
  first_message: number;
  final_message: number;
  checkout: number;
  trial: number;
  paid: number;
  retained: number;
  fee_cents: number;
  fee_refund_cents: number;
  subscription_cents: number;
  net_cents: number;
  net_cents_per_visitor: number;
};

/** A funnel or row with nothing in a period. */
export const NO_FIGURES: Figures = {
  visitors: 0,
  first_message: 0,
  final_message: 0,
  checkout: 0,
  trial: 0,
  paid: 0,
  retained: 0,
  fee_cents: 0,
  fee_refund_cents: 0,
  subscription_cents: 0,
  net_cents: 0,
  net_cents_per_visitor: 0,
};

export type By = 'campaign' | 'keyword' | 'utm_source' | 'utm_medium' | 'utm_campaign' | 'day' | 'week';

/**
 * What the ads cost for a row or the total (money in cents): null parts have no base (no
 * visitors, no trials, no cost).
 */
export type Cost = {
  cost_cents: number;
  clicks: number;
  cost_per_visitor_cents: number | null;
  /** The cost of acquiring a customer (CAC). */
  cost_per_trial_cents: number | null;
  /** Return on ad spend: net revenue / cost. */
  roas: number | null;
  profit_cents: number;
};

/**
 * The first cohort day of the range whose "First month paid" (`paid_from`) or "Subscribed after 30
 * days" (`retained_from`) can still grow: its trials are not due yet. Null when all are final.
 */
export type Pending = { paid_from: string | null; retained_from: string | null };

export type FunnelFigures = Figures & { funnel: string };
/**
 * A breakdown row. `campaign` is set by keyword ('' when none); `cost` is null when no cost is
 * loaded for it (and absent from a server that does not know costs).
 */
export type Row = Figures & { key: string; campaign?: string; cost?: Cost | null };

export type Report = {
  from: string;
  to: string;
  by: By;
  funnel: string | null;
  campaign: string | null;
  keyword?: string | null;
  /** Each funnel's figures within the campaign and keyword chosen (whatever the funnel chosen). */
  funnels: FunnelFigures[];
  /** The funnel, campaign and keyword chosen. */
  total: Figures & { cost?: Cost | null };
  rows: Row[];
  pending?: Pending;
};

export type Live = {
  funnelConversations: number;
  memberChats: number;
  realtimeConnections: number;
  messagesStored: number;
  aiCalls: number;
  aiFailures: number;
  /** The offline helper's designed answers (not failures). */
  aiScripted?: number;
};

/** What deleting an account took with it. */
export type Deleted = {
  deleted: {
    chats: number;
    messages: number;
    tasks: number;
    funnelConversations: number;
    visitors: number;
    events: number;
  };
  subscriptionCanceled: boolean;
  message: string;
};

export type ReportQuery = {
  from: string;
  to: string;
  by: By;
  funnel?: string;
  campaign?: string;
  /** A keyword within the campaign chosen. */
  keyword?: string;
};

export function queryString(query: ReportQuery, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams({ from: query.from, to: query.to, by: query.by, ...extra });
  if (query.funnel) params.set('funnel', query.funnel);
  if (query.campaign) params.set('campaign', query.campaign);
  if (query.keyword) params.set('keyword', query.keyword);
  return params.toString();
}

// Admins only: the server answers 404 to everyone else.
export const adminApi = {
  report: (query: ReportQuery, signal?: AbortSignal) =>
    api.get<Report>(`/api/admin/dashboard?${queryString(query)}`, signal),
  live: (signal?: AbortSignal) => api.get<Live>('/api/admin/live', signal),
  /**
   * Deletes an account on its owner's request (its subscription is canceled first); the admin
   * types their own password again.
   */
  deleteAccount: (email: string, password: string) =>
    api.post<Deleted>('/api/admin/accounts/delete', { email, password }),
  /** The CSV of the breakdown table, or of the funnels' table. */
  csvHref: (query: ReportQuery, table: 'rows' | 'funnels') =>
    `/api/admin/dashboard?${queryString(query, table === 'funnels' ? { format: 'csv', table: 'funnels' } : { format: 'csv' })}`,
};
