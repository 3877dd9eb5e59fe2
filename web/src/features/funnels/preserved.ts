// The spec's `preserved_funnel_data` (session storage: data, source, timestamp; valid 1 hour):
// what a visitor had on a funnel page when it left for the checkout, so a canceled checkout (or
// the Back button) brings them back to it rather than to an empty form.
import { record } from '../../lib/json';

export const PRESERVED_KEY = 'preserved_funnel_data';
export const PRESERVED_FOR_MS = 60 * 60 * 1000;

/** The help funnel's record, in the spec's fields. */
export type HelpFunnelRecord = {
  timestamp: number;
  userIssue: string | null;
  rawUserInput: string;
  aiIntro: string;
  funnel: 'help_funnel';
  campaignid: string | null;
  keyword: string | null;
  headline: string;
};

export function preserveHelpFunnel(data: HelpFunnelRecord): void {
  try {
    window.sessionStorage.setItem(
      PRESERVED_KEY,
      JSON.stringify({ data: { help_funnel: data }, source: 'help_funnel', timestamp: data.timestamp }),
    );
  } catch {
    // Private mode or a full storage: the visitor just starts over.
  }
}

/** The help funnel's preserved record when it is younger than an hour; else null. */
export function restoreHelpFunnel(now: number = Date.now()): HelpFunnelRecord | null {
  let raw: unknown;
  try {
    const text = window.sessionStorage.getItem(PRESERVED_KEY);
    raw = text === null ? null : JSON.parse(text);
  } catch {
    return null;
  }
  const stored = record(raw);
  const help = record(record(stored.data).help_funnel);
  const timestamp = typeof stored.timestamp === 'number' ? stored.timestamp : NaN;
  if (!(now - timestamp >= 0 && now - timestamp < PRESERVED_FOR_MS)) return null;
  if (typeof help.rawUserInput !== 'string' || help.rawUserInput.trim() === '') return null;
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : null);
  return {
    timestamp,
    userIssue: text(help.userIssue),
    rawUserInput: help.rawUserInput,
    aiIntro: text(help.aiIntro) ?? '',
    funnel: 'help_funnel',
    campaignid: text(help.campaignid),
    keyword: text(help.keyword),
    headline: text(help.headline) ?? '',
  };
}
