// The ad campaign's query parameters: read from the funnel's URL, remembered in local storage
// (the spec's `utm_params` key) and passed on to the server with each funnel request.
import { record } from './json';

export const CAMPAIGN_KEYS = ['keyword', 'campaignid', 'utm_source', 'utm_medium', 'utm_campaign', 'gclid'] as const;

export type CampaignKey = (typeof CAMPAIGN_KEYS)[number];

/** Only the parameters that have a value. */
export type CampaignParams = Partial<Record<CampaignKey, string>>;

export const UTM_STORAGE_KEY = 'utm_params';

export type StoredUtmParams = Record<CampaignKey, string | null> & { first_visit_timestamp: string | number };

/** The non-blank campaign parameters of a query string. */
export function readCampaignParams(search: string | URLSearchParams): CampaignParams {
  const query = typeof search === 'string' ? new URLSearchParams(search) : search;
  const params: CampaignParams = {};
  for (const key of CAMPAIGN_KEYS) {
    const value = query.get(key)?.trim();
    if (value) params[key] = value;
  }
  return params;
}

function storedValue(previous: Record<string, unknown>, key: string): string | null {
  const value = previous[key];
  return typeof value === 'string' && value !== '' ? value : null;
}

/**
 * The first campaign touch: once a visit with campaign parameters is stored, it stays whole (a
 * later ad click does not mix its source into the first one's campaign); until then the newest
 * visit's. The first visit's time is set once and never moves.
 */
export function mergeUtmParams(previous: unknown, current: CampaignParams, now: Date): StoredUtmParams {
  const before = record(previous);
  const touched = CAMPAIGN_KEYS.some((key) => storedValue(before, key) !== null);
  const firstVisit = before.first_visit_timestamp;
  const merged = {
    first_visit_timestamp:
      (typeof firstVisit === 'string' && firstVisit !== '') || typeof firstVisit === 'number'
        ? firstVisit
        : now.toISOString(),
  } as StoredUtmParams;
  for (const key of CAMPAIGN_KEYS) merged[key] = touched ? storedValue(before, key) : (current[key] ?? null);
  return merged;
}

function readStored(): unknown {
  try {
    const raw = window.localStorage.getItem(UTM_STORAGE_KEY);
    return raw === null ? null : JSON.parse(raw);
  } catch {
    return null;
  }
}

/** Merges this visit's parameters into local storage and returns what is stored now. */
export function rememberCampaignParams(current: CampaignParams, now: Date = new Date()): StoredUtmParams {
  const merged = mergeUtmParams(readStored(), current, now);
  try {
    window.localStorage.setItem(UTM_STORAGE_KEY, JSON.stringify(merged));
  } catch {
    // Private browsing or a full storage: attribution is a nicety, the funnel goes on.
  }
  return merged;
}

/** The visitor's first campaign touch as this browser kept it; empty when they came straight in. */
export function firstTouch(): CampaignParams {
  const before = record(readStored());
  const params: CampaignParams = {};
  for (const key of CAMPAIGN_KEYS) {
    const value = storedValue(before, key);
    if (value !== null) params[key] = value;
  }
  return params;
}
