import { api } from '../../lib/api';

export type SignupRequest = { email: string; password: string };
export type SignupResponse = { email: string };

export function signup(request: SignupRequest): Promise<SignupResponse> {
  return api.post<SignupResponse>('/api/auth/signup', request);
}
