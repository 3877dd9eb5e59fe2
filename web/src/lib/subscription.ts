// The spec's subscription check (`POST /api/check-subscription.js {userId}`): aborted after 5 s,
// asked at most once per 15 s per member, and answered from the last known status when the
// browser is offline or the server cannot be reached. The server decides; this only remembers.
import { ApiError, apiRequest } from './api';
import type { Access } from './auth';

export const CHECK_THROTTLE_MS = 15_000;
export const CHECK_ABORT_MS = 5_000;
/** Local storage: the last status the server gave, per member. */
export const STATUS_KEY = 'subscription_status';

export type SubscriptionStatus = {
  hasActiveSubscription: boolean;
  trialActive: boolean;
  trialEndDate: string | null;
  subscription: { id: string; status: string; planId: string | null; currentPeriodEnd: string | null } | null;
};

type Known = { userId: string; at: number; status: SubscriptionStatus };

let lastAsked: Known | null = null;

/** For tests: forget the throttle. */
export function resetSubscriptionCheck(): void {
  lastAsked = null;
}

function cached(userId: string): SubscriptionStatus | null {
  try {
    const raw = window.localStorage.getItem(STATUS_KEY);
    const known = raw === null ? null : (JSON.parse(raw) as Partial<Known>);
    return known?.userId === userId && known.status ? known.status : null;
  } catch {
    return null;
  }
}

function remember(known: Known): void {
  lastAsked = known;
  try {
    window.localStorage.setItem(STATUS_KEY, JSON.stringify(known));
  } catch {
    // A full or blocked storage only loses the offline answer.
  }
}

/** Forgets the stored status (sign-out). */
export function forgetSubscriptionStatus(): void {
  lastAsked = null;
  try {
    window.localStorage.removeItem(STATUS_KEY);
  } catch {
    // Nothing to forget.
  }
}

/** Whether an answer failed for want of a connection (not because the server said no). */
function unreachable(cause: unknown): boolean {
  return cause instanceof ApiError && (cause.code === 'network' || cause.code === 'timeout' || cause.status >= 500);
}

/**
 * The member's subscription status: the server's, at most once per 15 s (in between, the last
 * answer); offline or unreachable, the last known one. Throws the spec's errors ('Request
 * timeout', 'Network offline', the server's) when nothing is known.
 */
export async function checkSubscription(userId: string, now: number = Date.now()): Promise<SubscriptionStatus> {
  if (lastAsked && lastAsked.userId === userId && now - lastAsked.at < CHECK_THROTTLE_MS) return lastAsked.status;
  if (typeof navigator !== 'undefined' && navigator.onLine === false) {
    const known = cached(userId);
    if (known) return known;
    throw new ApiError(0, 'network', 'Network offline');
  }
  try {
    const status = await apiRequest<SubscriptionStatus>('/api/check-subscription.js', {
      method: 'POST',
      body: { userId },
      timeoutMs: CHECK_ABORT_MS,
    });
    remember({ userId, at: now, status });
    return status;
  } catch (cause) {
    const known = unreachable(cause) ? cached(userId) : null;
    if (known) return known;
    throw cause;
  }
}

/** What the page shows of a status. */
export function accessOf(status: SubscriptionStatus): Access {
  return {
    hasAccess: status.hasActiveSubscription || status.trialActive,
    trialActive: status.trialActive,
    hasActiveSubscription: status.hasActiveSubscription,
    trialEndDate: status.trialEndDate,
  };
}
