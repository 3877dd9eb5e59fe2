import { ApiError, api } from './api';

/**
 * The codes of the account forms' own answers, each in the spec's words or ours (a wrong or weak
 * password, an address in use, a form field missing, a spent link, too many tries): shown as the
 * server says them.
 */
const ACCOUNT_FORM_CODES = new Set([
  'email_required',
  'invalid_email',
  'email_in_use',
  'email_mismatch',
  'password_required',
  'weak_password',
  'password_too_long',
  'wrong_password',
  'invalid_credentials',
  'no_session',
  'reset_link_invalid',
  'invalid_token',
  'too_many_requests',
]);

/**
 * What an account form says when it fails: its own answers as they are, any other error (the
 * server's fault, the network) as the spec's 'Error: {message}'.
 */
export function accountFormError(cause: unknown): string {
  if (cause instanceof ApiError && ACCOUNT_FORM_CODES.has(cause.code)) return cause.message;
  const message = cause instanceof Error ? cause.message : String(cause);
  return `Error: ${message}`;
}

/** What the server decides about access (DESIGN 6): the client only shows it. */
export type Access = {
  hasAccess: boolean;
  trialActive: boolean;
  hasActiveSubscription: boolean;
  trialEndDate: string | null;
  /** A $1 setup fee was paid and not refunded yet: 'Refund my $1 setup fee' is offered. */
  feeRefundable?: boolean;
};

/** The checkout that created an account which has no password yet. */
export type PendingSetup = { email: string; session: string; paymentSessionId: string };

/**
 * Sign-in and sign-up answers carry only `id` and `email`; `GET /api/auth/me` adds the rest,
 * so a page that needs access asks the session to refresh after a sign-in.
 */
export type User = {
  id: string;
  email: string;
  hasPassword?: boolean;
  /**
   * A mailed link proved the address and took the account over (the password set before the
   * proof is gone): this session chooses a new password before anything else.
   */
  mustChoosePassword?: boolean;
  access?: Access;
  pendingSetup?: PendingSetup | null;
  /** The shortcut names kept with the account. */
  shortcuts?: string[];
  /** May open the operator's pages (/admin): the header's menu offers the dashboard. */
  admin?: boolean;
};
type UserAnswer = { user: User };

export type Credentials = { email: string; password: string };

export const authApi = {
  me: (signal?: AbortSignal) => api.get<{ user: User | null }>('/api/auth/me', signal),
  signup: (credentials: Credentials) => api.post<UserAnswer>('/api/auth/signup', credentials),
  /** An account from an email alone: signed in at once, the password chosen from a mailed link. */
  signupByEmail: (email: string) =>
    api.post<UserAnswer>('/api/auth/signup', { email, setPasswordByMail: true }),
  login: (credentials: Credentials) => api.post<UserAnswer>('/api/auth/login', credentials),
  logout: () => api.post<null>('/api/auth/logout', {}),
  requestReset: (email: string) => api.post<{ message: string }>('/api/auth/reset', { email }),
  checkReset: (token: string) => api.post<{ valid: boolean }>('/api/auth/reset/check', { token }),
  confirmReset: (token: string, password: string) =>
    api.post<UserAnswer>('/api/auth/reset/confirm', { token, password }),
};
