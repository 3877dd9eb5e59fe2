import { api, apiRequest } from '../../lib/api';

export type Shortcut = { name: string; icon: string; url: string };

export async function fetchShortcuts(signal?: AbortSignal): Promise<Shortcut[]> {
  const response = await api.get<{ shortcuts: Shortcut[] }>('/api/shortcuts', signal);
  return response.shortcuts;
}

/** Keeps the member's choice with the account, so it follows them to other devices; answers what was stored. */
export async function saveAccountShortcuts(names: string[]): Promise<string[]> {
  const response = await apiRequest<{ shortcuts: string[] }>('/api/account/shortcuts', {
    method: 'PUT',
    body: { shortcuts: names },
  });
  return response.shortcuts;
}
