import { api } from '../../lib/api';

export type Shortcut = { name: string; icon: string; url: string };

export async function fetchShortcuts(signal?: AbortSignal): Promise<Shortcut[]> {
  const response = await api.get<{ shortcuts: Shortcut[] }>('/api/shortcuts', signal);
  return response.shortcuts;
}
