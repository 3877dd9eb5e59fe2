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

export type By = 'campaign' | 'keyword' | 'utm_source' | 'utm_medium' | 'utm_campaign' | 'day' | 'week';

export type FunnelFigures = Figures & { funnel: string };
export type Row = Figures & { key: string };

export type Report = {
  from: string;
  to: string;
  by: By;
  funnel: string | null;
  campaign: string | null;
  funnels: FunnelFigures[];
  total: Figures;
  rows: Row[];
};

export type Live = {
  funnelConversations: number;
  memberChats: number;
  realtimeConnections: number;
  messagesStored: number;
  aiCalls: number;
  aiFailures: number;
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
};

export function queryString(query: ReportQuery, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams({ from: query.from, to: query.to, by: query.by, ...extra });
  if (query.funnel) params.set('funnel', query.funnel);
  if (query.campaign) params.set('campaign', query.campaign);
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
