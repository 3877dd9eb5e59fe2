import { mockApi } from '../../../test/fetch-mock';
import { experimentsApi, failureOf } from './experiments-api';
import { DEFAULT_DEFINITION } from './experiment-form';
import { experiment, requests } from './test-fixtures';

function calls(fetchMock: ReturnType<typeof mockApi>): { method: string; url: string; body: unknown }[] {
  return fetchMock.mock.calls.map(([input, init]) => ({
    method: init?.method ?? 'GET',
    url: String(input),
    body: init?.body ? JSON.parse(String(init.body)) : undefined,
  }));
}

describe('experimentsApi', () => {
  it('reads the list and one experiment at their addresses', async () => {
    const fetchMock = mockApi({
      'GET /api/admin/experiments': { body: { experiments: [], flows: [] } },
      'GET /api/admin/experiments/exp%201': { body: { experiment: experiment(), analysis: null, history: [] } },
    });
    await experimentsApi.list();
    await experimentsApi.get('exp 1');
    expect(calls(fetchMock)).toEqual([
      { method: 'GET', url: '/api/admin/experiments', body: undefined },
      { method: 'GET', url: '/api/admin/experiments/exp%201', body: undefined },
    ]);
  });

  it('sends a definition, and only the definition, with each arm keyed by its place', async () => {
    const fetchMock = mockApi({
      'POST /api/admin/experiments': { status: 201, body: experiment({ status: 'draft' }) },
      'PUT /api/admin/experiments/exp1': { body: experiment({ status: 'draft' }) },
    });
    await experimentsApi.create(DEFAULT_DEFINITION);
    // An experiment read back: its id, status, dates and arm keys are the server's, not sent.
    await experimentsApi.update('exp1', experiment({ status: 'draft' }));

    const definition = {
      name: '',
      scope: { funnel: 'chat', campaigns: [], keywords: [] },
      arms: [
        { key: 'a', name: 'Control', flow: null, offer: null, weight: 50 },
        { key: 'b', name: 'Variant', flow: null, offer: null, weight: 50 },
      ],
      goal: { metric: 'trial_paid', days: 14 },
      guardrails: { maxRefundRate: null, maxEarlyLeaveRate: null },
      rule: { minExposures: 1000, minDays: 7, chance: 0.95, maxLoss: 0.002 },
      autoPromote: false,
    };
    expect(requests(fetchMock, 'POST', '/api/admin/experiments')).toEqual([definition]);
    const [saved] = requests(fetchMock, 'PUT', '/api/admin/experiments/exp1') as Record<string, unknown>[];
    expect(Object.keys(saved).sort()).toEqual(['arms', 'autoPromote', 'goal', 'guardrails', 'name', 'rule', 'scope']);
    expect(saved.arms).toEqual([
      { key: 'a', name: 'Control', flow: null, offer: null, weight: 50 },
      { key: 'b', name: 'Short', flow: { name: 'default', version: 3 }, offer: 'refundable', weight: 50 },
    ]);
    const put = fetchMock.mock.calls.find(([, init]) => init?.method === 'PUT');
    expect(new Headers(put?.[1]?.headers).get('Content-Type')).toBe('application/json');
  });

  it('posts the steps without a body, and the promoted arm as {arm}', async () => {
    const answer = { body: experiment() };
    const fetchMock = mockApi({
      'POST /api/admin/experiments/exp1/start': answer,
      'POST /api/admin/experiments/exp1/pause': answer,
      'POST /api/admin/experiments/exp1/stop': answer,
      'POST /api/admin/experiments/exp1/archive': answer,
      'POST /api/admin/experiments/exp1/promote': answer,
    });
    await experimentsApi.act('exp1', 'start');
    await experimentsApi.act('exp1', 'pause');
    await experimentsApi.act('exp1', 'stop');
    await experimentsApi.act('exp1', 'archive');
    await experimentsApi.promote('exp1', 'b');
    expect(calls(fetchMock)).toEqual([
      { method: 'POST', url: '/api/admin/experiments/exp1/start', body: undefined },
      { method: 'POST', url: '/api/admin/experiments/exp1/pause', body: undefined },
      { method: 'POST', url: '/api/admin/experiments/exp1/stop', body: undefined },
      { method: 'POST', url: '/api/admin/experiments/exp1/archive', body: undefined },
      { method: 'POST', url: '/api/admin/experiments/exp1/promote', body: { arm: 'b' } },
    ]);
  });

  it('reads the code, the message and the problems of a failure', async () => {
    mockApi({
      'POST /api/admin/experiments': {
        status: 422,
        body: { error: 'invalid', message: 'Nothing was saved.', problems: [{ field: 'name', message: 'Enter a name.' }] },
      },
      'POST /api/admin/experiments/exp1/start': {
        status: 409,
        body: { error: 'overlaps', message: 'It overlaps “Offer test”, which is running.' },
      },
    });
    const invalid = await experimentsApi.create(DEFAULT_DEFINITION).catch(failureOf);
    expect(invalid).toEqual({
      status: 422,
      code: 'invalid',
      message: 'Nothing was saved.',
      problems: [{ field: 'name', message: 'Enter a name.' }],
    });
    const overlaps = await experimentsApi.act('exp1', 'start').catch(failureOf);
    expect(overlaps).toMatchObject({ status: 409, code: 'overlaps', message: 'It overlaps “Offer test”, which is running.' });
  });
});
