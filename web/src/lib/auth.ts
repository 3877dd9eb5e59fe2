import { api } from './api';

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
