// The one HTTP client of the app. The server answers JSON, and every error as
// `{error: code, message: text}`; callers get that pair back as an ApiError.
import { isRecord } from './json';

const REQUEST_TIMEOUT_MS = 8000;

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  /** The answer's whole JSON body, when it had one (what else it says besides code and message). */
  readonly body: unknown;

  constructor(status: number, code: string, message: string, body: unknown = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

type RequestOptions = {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  body?: unknown;
  signal?: AbortSignal;
  /** Overrides the 8 s time-out (the spec gives the checkout-success call 15 s). */
  timeoutMs?: number;
};

function isErrorBody(value: unknown): value is { error: string; message: string } {
  return isRecord(value) && typeof value.error === 'string' && typeof value.message === 'string';
}

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export async function apiRequest<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? REQUEST_TIMEOUT_MS);
  const forwardAbort = () => controller.abort();
  options.signal?.addEventListener('abort', forwardAbort);

  let response: Response;
  try {
    response = await fetch(path, {
      method: options.method ?? 'GET',
      headers:
        options.body === undefined
          ? { Accept: 'application/json' }
          : { Accept: 'application/json', 'Content-Type': 'application/json' },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      credentials: 'same-origin',
      signal: controller.signal,
    });
  } catch {
    if (options.signal?.aborted) throw new ApiError(0, 'aborted', 'Request cancelled');
    if (controller.signal.aborted) throw new ApiError(0, 'timeout', 'Request timeout');
    throw new ApiError(0, 'network', 'Network offline');
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', forwardAbort);
  }

  const payload = await readJson(response);
  if (!response.ok) {
    if (isErrorBody(payload)) throw new ApiError(response.status, payload.error, payload.message, payload);
    throw new ApiError(response.status, 'http_error', `Request failed with status ${response.status}`, payload);
  }
  return payload as T;
}

export const api = {
  get: <T>(path: string, signal?: AbortSignal, timeoutMs?: number) => apiRequest<T>(path, { signal, timeoutMs }),
  post: <T>(path: string, body: unknown, signal?: AbortSignal) =>
    apiRequest<T>(path, { method: 'POST', body, signal }),
};
