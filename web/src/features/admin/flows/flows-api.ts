// The funnels' flows (issue 47): `/api/admin/flows*`, as the shared contract of the issue says.
// Admins only: the server answers 404 to everyone else.
import { ApiError, apiRequest } from '../../../lib/api';
import { isRecord } from '../../../lib/json';

/** The texts of a flow version, in the editor's order (the server's `fields` labels them). */
export const TEXT_KEYS = [
  'greeting',
  'followUp',
  'troubleshooting',
  'unclearFollowUp',
  'unclearTroubleshooting',
  'finalChat',
  'finalRefundable',
  'helpIntro',
] as const;

export const NUMBER_KEYS = ['typingDelayMinMs', 'typingDelayMaxMs', 'autoCheckoutAfterS'] as const;

export type TextKey = (typeof TEXT_KEYS)[number];
export type NumberKey = (typeof NUMBER_KEYS)[number];

/** One version of a flow: every text and number a funnel conversation takes from it. */
export type FlowScript = Record<TextKey, string> & Record<NumberKey, number>;

/** A problem of one field: `greeting`, `typingDelayMaxMs`, `campaigns.2145`, `keywords.printer`, `name`. */
export type Problem = { field: string; message: string };

export type Draft = {
  script: FlowScript;
  /** The published version it was started from (null: a new flow). */
  basedOn: number | null;
  updatedAt: string;
  updatedBy: string;
  problems: Problem[];
};

export type VersionInfo = { version: number; publishedAt: string; publishedBy: string };

export type Flow = {
  name: string;
  /** The version new conversations get; null for a new flow not published yet. */
  published: number | null;
  /** Newest first. */
  versions: VersionInfo[];
  /** The published version's script (null when none is). */
  script: FlowScript | null;
  draft: Draft | null;
  usesKeyword: boolean;
  /** Where the routing uses it, in words: "default flow", "campaign 2145", "keyword email". */
  routedBy: string[];
};

/** The funnels a visitor may meet: /chat-help, /Chat-Help-2, /get-help. */
export type Offer = 'chat' | 'refundable' | 'help';

/** The funnels by the names the operator's pages give them, with the pages they start on. */
export const OFFER_NAMES: Record<Offer, string> = {
  chat: 'Chat funnel (/chat-help)',
  refundable: 'Refundable-fee chat (/Chat-Help-2)',
  help: 'Help form (/get-help)',
};

export type Routing = {
  campaigns: Record<string, string>;
  keywords: Record<string, string>;
  keywordFlow: string | null;
  defaultFlow: string;
  /**
   * Campaign id -> the funnel its visitors meet, wherever the ad sends them: set when an
   * experiment's winning offer is promoted (issue 48). Not edited here, and sent back as it came.
   * The server leaves it out when there are none.
   */
  offers?: Record<string, Offer>;
};

export type PublishedRouting = Routing & { version: number; publishedAt: string; publishedBy: string };

export type Bounds = {
  textMaxChars: number;
  typingMinMs: number;
  typingMaxMs: number;
  autoCheckoutMinS: number;
  autoCheckoutMaxS: number;
};

export type FlowsOverview = {
  flows: Flow[];
  routing: PublishedRouting;
  placeholders: { name: string; meaning: string }[];
  fields: { key: TextKey; label: string }[];
  bounds: Bounds;
};

export type FlowVersion = { name: string; version: number; script: FlowScript; publishedAt: string; publishedBy: string };

export type HistoryEntry = {
  at: string;
  by: string;
  kind: 'import' | 'publish' | 'rollback' | 'routing';
  flow: string | null;
  version: number;
  fromVersion: number | null;
  changes: { field: string; before: string | null; after: string }[];
};

export type Preview = { previewId: string; expiresAt: string };

/** The chat funnels a preview runs in, as the drop-off's `funnel` names them. */
export type PreviewFunnel = 'chat' | 'refundable';

export type DropoffStep = {
  step: string;
  count: number;
  /** The median time spent at this step before the next one (null: none went on, or the last step). */
  medianMsToNext: number | null;
  /** The checkout's: opened by the button, and by itself. */
  button?: number;
  automatic?: number;
};

export type DropoffFlow = { name: string; versions: { version: number; steps: DropoffStep[] }[] };

export type Dropoff = { from: string; to: string; steps: string[]; flows: DropoffFlow[] };

export type DropoffQuery = {
  from: string;
  to: string;
  funnel?: PreviewFunnel;
  flow?: string;
  campaign?: string;
  keyword?: string;
};

/** A failure as the page tells it: the server's code and words, and its problems by field. */
export type Failure = { status: number; code: string; message: string; problems: Problem[] };

function problemsIn(body: unknown): Problem[] {
  if (!isRecord(body) || !Array.isArray(body.problems)) return [];
  return body.problems.flatMap((raw: unknown) =>
    isRecord(raw) && typeof raw.field === 'string' && typeof raw.message === 'string'
      ? [{ field: raw.field, message: raw.message }]
      : [],
  );
}

/**
 * What went wrong, read from either shape of error body: the app's `{error: code, message}` and
 * the contract's `{code, error: message, problems}`.
 */
export function failureOf(cause: unknown): Failure {
  if (!(cause instanceof ApiError)) return { status: 0, code: 'unknown', message: '', problems: [] };
  const body = cause.body;
  let { code, message } = cause;
  if (code === 'http_error' && isRecord(body) && typeof body.code === 'string') {
    code = body.code;
    message = typeof body.error === 'string' ? body.error : '';
  }
  return { status: cause.status, code, message, problems: problemsIn(body) };
}

/** Not an admin (or signed out): the server says there is no such page. */
export function isUnavailable(cause: unknown): boolean {
  return cause instanceof ApiError && (cause.status === 404 || cause.status === 401);
}

const BASE = '/api/admin/flows';
const flowPath = (name: string) => `${BASE}/${encodeURIComponent(name)}`;

/** The drop-off's query: the range always, the rest when chosen. */
export function dropoffSearch(query: DropoffQuery, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams({ from: query.from, to: query.to });
  for (const key of ['funnel', 'flow', 'campaign', 'keyword'] as const) {
    const value = query[key];
    if (value) params.set(key, value);
  }
  for (const [key, value] of Object.entries(extra)) params.set(key, value);
  return params.toString();
}

export const flowsApi = {
  overview: (signal?: AbortSignal) => apiRequest<FlowsOverview>(BASE, { signal }),
  version: (name: string, version: number, signal?: AbortSignal) =>
    apiRequest<FlowVersion>(`${flowPath(name)}/versions/${version}`, { signal }),
  /** A new flow: a draft copied from the published script of `copyFrom`. */
  create: (name: string, copyFrom: string) =>
    apiRequest<{ draft: Draft }>(BASE, { method: 'POST', body: { name, copyFrom } }),
  /** Saved even with problems: the answer's draft lists them. */
  saveDraft: (name: string, script: FlowScript, basedOn: number | null) =>
    apiRequest<{ draft: Draft }>(`${flowPath(name)}/draft`, { method: 'PUT', body: { script, basedOn } }),
  discardDraft: (name: string) => apiRequest<null>(`${flowPath(name)}/draft`, { method: 'DELETE' }),
  publish: (name: string, basedOn: number | null) =>
    apiRequest<{ version: number }>(`${flowPath(name)}/publish`, { method: 'POST', body: { basedOn } }),
  rollback: (name: string, version: number) =>
    apiRequest<{ published: number }>(`${flowPath(name)}/rollback`, { method: 'POST', body: { version } }),
  publishRouting: (routing: Routing, basedOn: number) =>
    apiRequest<{ version: number }>(`${BASE}/routing`, { method: 'PUT', body: { routing, basedOn } }),
  history: (limit: number, signal?: AbortSignal) =>
    apiRequest<{ entries: HistoryEntry[] }>(`${BASE}/history?limit=${limit}`, { signal }),
  preview: (name: string, script: FlowScript) =>
    apiRequest<Preview>(`${flowPath(name)}/preview`, { method: 'POST', body: { script } }),
  dropoff: (query: DropoffQuery, signal?: AbortSignal) =>
    apiRequest<Dropoff>(`${BASE}/dropoff?${dropoffSearch(query)}`, { signal }),
  dropoffCsvHref: (query: DropoffQuery) => `${BASE}/dropoff?${dropoffSearch(query, { format: 'csv' })}`,
};
