import { vi } from 'vitest';
import { mockApi } from '../test/fetch-mock';
import { CHECK_THROTTLE_MS, STATUS_KEY, accessOf, checkSubscription } from './subscription';

const ACTIVE = { hasActiveSubscription: true, trialActive: true, trialEndDate: '2030-01-08T00:00:00Z', subscription: null };

function checks(fetchMock: ReturnType<typeof mockApi>) {
  return fetchMock.mock.calls.filter(([url]) => url === '/api/check-subscription.js');
}

describe('the subscription check', () => {
  it('asks the server at most once per 15 s per member, and remembers the answer', async () => {
    const fetchMock = mockApi({ 'POST /api/check-subscription.js': { body: ACTIVE } });
    expect(await checkSubscription('u1', 1_000)).toEqual(ACTIVE);
    expect(await checkSubscription('u1', 1_000 + CHECK_THROTTLE_MS - 1)).toEqual(ACTIVE);
    expect(checks(fetchMock)).toHaveLength(1);
    expect(JSON.parse(String(checks(fetchMock)[0]?.[1]?.body))).toEqual({ userId: 'u1' });
    await checkSubscription('u1', 1_000 + CHECK_THROTTLE_MS);
    expect(checks(fetchMock)).toHaveLength(2);
    expect(JSON.parse(window.localStorage.getItem(STATUS_KEY) ?? 'null').status).toEqual(ACTIVE);
    expect(accessOf(ACTIVE).hasAccess).toBe(true);
  });

  it("gives up after 5 s with the spec's 'Request timeout'", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    vi.stubGlobal(
      'fetch',
      vi.fn<typeof fetch>(
        (_input, init) =>
          new Promise<Response>((_resolve, reject) => {
            init?.signal?.addEventListener('abort', () => reject(new DOMException('Aborted', 'AbortError')));
          }),
      ),
    );
    const answer = checkSubscription('u1', 1_000).then(
      () => 'answered',
      (cause: Error) => cause.message,
    );
    await vi.advanceTimersByTimeAsync(4_999);
    await vi.advanceTimersByTimeAsync(1);
    expect(await answer).toBe('Request timeout');
    vi.useRealTimers();
  });

  it('answers offline from the last known status, and says so when there is none', async () => {
    mockApi({ 'POST /api/check-subscription.js': { body: ACTIVE } });
    await checkSubscription('u1', 1_000);
    vi.spyOn(navigator, 'onLine', 'get').mockReturnValue(false);
    expect(await checkSubscription('u1', 1_000_000)).toEqual(ACTIVE);
    await expect(checkSubscription('u2', 1_000_000)).rejects.toThrow('Network offline');
  });

  it('keeps the last known status when the server fails, but not what it refuses', async () => {
    mockApi({ 'POST /api/check-subscription.js': { body: ACTIVE } });
    await checkSubscription('u1', 1_000);
    mockApi({ 'POST /api/check-subscription.js': { status: 503, body: { error: 'unavailable', message: 'Later' } } });
    expect(await checkSubscription('u1', 100_000)).toEqual(ACTIVE);
    mockApi({ 'POST /api/check-subscription.js': { status: 400, body: { error: 'missing_user', message: 'No userId provided' } } });
    await expect(checkSubscription('u1', 200_000)).rejects.toThrow('No userId provided');
  });
});
