import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import { api } from './api';
import { record } from './json';

export type PublicConfig = {
  productName: string;
  assistantName: string;
  supportEmail: string;
  debugTools: boolean;
  /** 'offline' when members' answers come from the help library rather than an AI service. */
  aiMode: 'offline' | 'live';
};

// Shown until the server's answer arrives, and kept if it never does.
export const DEFAULT_PUBLIC_CONFIG: PublicConfig = {
  productName: 'HelpNow',
  assistantName: 'Emma',
  supportEmail: '',
  debugTools: false,
  // Until the server says otherwise, no offline notice shows.
  aiMode: 'live',
};

const PublicConfigContext = createContext<PublicConfig>(DEFAULT_PUBLIC_CONFIG);

function parsePublicConfig(value: unknown): Partial<PublicConfig> {
  const raw = record(value);
  const config: Partial<PublicConfig> = {};
  if (typeof raw.productName === 'string' && raw.productName !== '') config.productName = raw.productName;
  if (typeof raw.assistantName === 'string' && raw.assistantName !== '') config.assistantName = raw.assistantName;
  if (typeof raw.supportEmail === 'string') config.supportEmail = raw.supportEmail;
  if (typeof raw.debugTools === 'boolean') config.debugTools = raw.debugTools;
  if (raw.aiMode === 'offline' || raw.aiMode === 'live') config.aiMode = raw.aiMode;
  return config;
}

export function PublicConfigProvider({ children }: { children: ReactNode }) {
  const [config, setConfig] = useState<PublicConfig>(DEFAULT_PUBLIC_CONFIG);

  useEffect(() => {
    const controller = new AbortController();
    api
      .get<unknown>('/api/public-config', controller.signal)
      .then((value) => setConfig({ ...DEFAULT_PUBLIC_CONFIG, ...parsePublicConfig(value) }))
      .catch(() => {
        // The defaults are good enough to show every page.
      });
    return () => controller.abort();
  }, []);

  return <PublicConfigContext.Provider value={config}>{children}</PublicConfigContext.Provider>;
}

export function usePublicConfig(): PublicConfig {
  return useContext(PublicConfigContext);
}
