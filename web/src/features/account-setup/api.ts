import { api } from '../../lib/api';
import type { User } from '../../lib/auth';

/** What the checkout (proved by an HttpOnly cookie the success page got) says about the account. */
export type AccountSetupStatus = {
  email: string;
  hasPassword: boolean;
  /** A mailed link proved the address and took the password set before it: a new one, now. */
  mustChoosePassword?: boolean;
  trialActive: boolean;
  trialEndDate: string | null;
};

export type AccountSetupAnswer = { user: User; trialActive: boolean };

export const accountSetupApi = {
  status: (signal?: AbortSignal) => api.get<AccountSetupStatus>('/api/account/setup', signal),
  setUp: (credentials: { email: string; password: string }) =>
    api.post<AccountSetupAnswer>('/api/account/setup', credentials),
};
