// The operator's tools beside the figures (issue 52): the ads' costs, the payments held for their
// owners, and an account looked up before it is deleted. Admins only: the server answers 404 to
// everyone else.
import { ApiError, api } from '../../lib/api';
import { isRecord } from '../../lib/json';

/** What `GET /api/admin/costs` says is loaded: `from` and `to` are null when nothing is. */
export type CostsLoaded = {
  from: string | null;
  to: string | null;
  days: number;
  campaigns: number;
  cost_cents: number;
};

/** An upload's answer: `message` says what was stored in the server's words. */
export type CostsUploaded = {
  message: string;
  from: string;
  to: string;
  days: number;
  campaigns: number;
  rows: number;
  cost_cents: number;
  replaced: number;
};

/** An account as `GET /api/admin/accounts?email=` finds it. */
export type AccountFound = {
  email: string;
  createdAt: string;
  plan: string;
  /** "Subscribed ($20/month)", "Free trial until 2026-12-05", "No subscription". */
  planLabel: string;
  trialEndDate: string | null;
  currentPeriodEnd: string | null;
  subscriptionStatus: string | null;
};

/** A payment made signed out with the address of an account, waiting for that account's owner. */
export type HeldPayment = {
  id: string;
  email: string;
  paidAt: string | null;
  /** When it is canceled and refunded by itself, unless the owner answers first. */
  expiresAt: string | null;
  setupFee: boolean;
};

/** The server takes files up to 5 MiB. */
export const MAX_COSTS_BYTES = 5 * 1024 * 1024;
/** A large file on a slow line takes longer than the JSON calls' 8 s. */
const UPLOAD_TIMEOUT_MS = 60_000;

function isErrorBody(value: unknown): value is { error: string; message: string } {
  return isRecord(value) && typeof value.error === 'string' && typeof value.message === 'string';
}

/**
 * Sends the file as it is (the body is the CSV, not JSON), answered like every other call: the
 * server's `{error, message}` comes back as an ApiError, as `apiRequest` does it.
 */
async function uploadCsv<T>(path: string, file: Blob, signal?: AbortSignal): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), UPLOAD_TIMEOUT_MS);
  const forwardAbort = () => controller.abort();
  signal?.addEventListener('abort', forwardAbort);

  let response: Response;
  try {
    response = await fetch(path, {
      method: 'POST',
      headers: { Accept: 'application/json', 'Content-Type': 'text/csv' },
      body: file,
      credentials: 'same-origin',
      signal: controller.signal,
    });
  } catch {
    if (signal?.aborted) throw new ApiError(0, 'aborted', 'Request cancelled');
    if (controller.signal.aborted) throw new ApiError(0, 'timeout', 'Request timeout');
    throw new ApiError(0, 'network', 'Network offline');
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', forwardAbort);
  }

  const text = await response.text();
  let payload: unknown = null;
  try {
    payload = text === '' ? null : JSON.parse(text);
  } catch {
    payload = null;
  }
  if (!response.ok) {
    if (isErrorBody(payload)) throw new ApiError(response.status, payload.error, payload.message);
    throw new ApiError(response.status, 'http_error', `Request failed with status ${response.status}`);
  }
  return payload as T;
}

export const operationsApi = {
  costs: (signal?: AbortSignal) => api.get<CostsLoaded>('/api/admin/costs', signal),
  /** Replaces the costs of the days the file covers. */
  uploadCosts: (file: Blob, signal?: AbortSignal) => uploadCsv<CostsUploaded>('/api/admin/costs', file, signal),
  findAccount: (email: string, signal?: AbortSignal) =>
    api.get<AccountFound>(`/api/admin/accounts?${new URLSearchParams({ email }).toString()}`, signal),
  held: (signal?: AbortSignal) => api.get<{ held: HeldPayment[] }>('/api/admin/held', signal),
  /** Mails the owner about the payment again. */
  remindHeld: (id: string) => api.post<{ message: string }>(`/api/admin/held/${encodeURIComponent(id)}/remind`, {}),
  /** Cancels the payment's subscription and refunds its setup fee, as the owner's decline would. */
  declineHeld: (id: string) => api.post<{ message: string }>(`/api/admin/held/${encodeURIComponent(id)}/decline`, {}),
};
