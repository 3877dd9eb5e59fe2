import { api } from '../../lib/api';
import { isRecord, record } from '../../lib/json';
import type { CampaignParams } from '../../lib/campaign-params';

/** One AI provider call made for this visitor, as the debug overlay lists it. */
export type AiCallEvent = { time: string | number; kind: string; outcome: string; durationMs: number | null };

export type HelpAnswer = { summary: string | null; intro: string; aiEvents: AiCallEvent[] };

/** Used when the server's answer has no intro, or there is no answer at all. */
export const DEFAULT_HELP_INTRO =
  "Thanks for telling us about your issue. We've put together a step-by-step solution to get it fixed quickly.";

export type HelpRequest = CampaignParams & { issue: string };

export type HelpCheckoutRequest = CampaignParams & {
  source: 'help_funnel';
  isTrial: true;
  headline: string;
  /** Where the payment page's Back link returns: this funnel, as the visitor saw it. */
  cancelUrl: string;
  /** The visitor's first campaign touch (the page's own campaign is this checkout's). */
  firstTouch: CampaignParams;
};

/** `url` is where the browser goes next: the provider's hosted page, or a same-site demo path. */
export type CheckoutStart = { sessionId: string; trackingSessionId: string; url?: string | null };

export type FunnelViewEvent = 'chatbot_funnel_view' | 'refundable_fee_funnel_view';

function parseAiEvents(value: unknown): AiCallEvent[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((raw: unknown) => {
    if (!isRecord(raw)) return [];
    const time = typeof raw.time === 'string' || typeof raw.time === 'number' ? raw.time : '';
    return [
      {
        time,
        kind: typeof raw.kind === 'string' ? raw.kind : 'unknown',
        outcome: typeof raw.outcome === 'string' ? raw.outcome : 'unknown',
        durationMs: typeof raw.durationMs === 'number' ? raw.durationMs : null,
      },
    ];
  });
}

/** The server cleans the summary and intro; this only guards against a missing or odd field. */
export function parseHelpAnswer(value: unknown): HelpAnswer {
  const raw = record(value);
  const summary = typeof raw.summary === 'string' && raw.summary.trim() !== '' ? raw.summary.trim() : null;
  const intro = typeof raw.intro === 'string' && raw.intro.trim() !== '' ? raw.intro.trim() : DEFAULT_HELP_INTRO;
  return { summary, intro, aiEvents: parseAiEvents(raw.aiEvents) };
}

export const funnelsApi = {
  askForHelp: (request: HelpRequest) => api.post<unknown>('/api/funnels/help', request).then(parseHelpAnswer),
  createCheckout: (request: HelpCheckoutRequest) => api.post<CheckoutStart>('/api/create-checkout.js', request),
  trackView: (name: FunnelViewEvent, properties: Record<string, string | null>, path: string) =>
    api.post<unknown>('/api/events', { name, properties, path }),
};
