import { api } from '../../lib/api';

export type User = { id: string; email: string };
type UserAnswer = { user: User };

export type Credentials = { email: string; password: string };

export const authApi = {
  me: (signal?: AbortSignal) => api.get<{ user: User | null }>('/api/auth/me', signal),
  signup: (credentials: Credentials) => api.post<UserAnswer>('/api/auth/signup', credentials),
  login: (credentials: Credentials) => api.post<UserAnswer>('/api/auth/login', credentials),
  logout: () => api.post<null>('/api/auth/logout', {}),
  requestReset: (email: string) => api.post<{ message: string }>('/api/auth/reset', { email }),
  checkReset: (token: string) => api.post<{ valid: boolean }>('/api/auth/reset/check', { token }),
  confirmReset: (token: string, password: string) =>
    api.post<UserAnswer>('/api/auth/reset/confirm', { token, password }),
};
