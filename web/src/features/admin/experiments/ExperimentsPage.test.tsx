import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { mockApi } from '../../../test/fetch-mock';
import { NOT_AVAILABLE } from '../sections';
import { MIN_GAP_MS, POLL_MS } from './ExperimentDetail';
import { ExperimentsPage } from './ExperimentsPage';
import { analysis, detail, experiment, FLOWS, plainText, requests } from './test-fixtures';

type Handlers = Parameters<typeof mockApi>[0];

const DRAFT = experiment({ id: 'exp2', name: 'Offer test', status: 'draft', startedAt: null });
const RUNNING = experiment();
const ARCHIVED = experiment({ id: 'exp0', name: 'Old test', status: 'archived', scope: { funnel: 'help', campaigns: [], keywords: [] } });

function server(changes: Handlers = {}) {
  return mockApi({
    'GET /api/admin/experiments': { body: { experiments: [DRAFT, RUNNING, ARCHIVED], flows: FLOWS } },
    'GET /api/admin/experiments/exp1': { body: detail() },
    'GET /api/admin/experiments/exp2': {
      body: detail({ experiment: DRAFT, analysis: analysis({ arms: [], status: 'Not started.', promotable: null }) }),
    },
    ...changes,
  });
}

function renderPage(path = '/admin/experiments') {
  const router = createMemoryRouter(
    [
      { path: '/admin/experiments', element: <ExperimentsPage /> },
      { path: '/admin/flows', element: <h1>Flows</h1> },
      { path: '/admin', element: <h1>Dashboard</h1> },
      { path: '/', element: <h1>Home</h1> },
    ],
    { initialEntries: [path] },
  );
  render(<RouterProvider router={router} />);
  return router;
}

/** Lets the answers (read on real macrotasks) arrive, fake time standing still. */
async function settle(turns = 30) {
  for (let turn = 0; turn < turns; turn += 1) {
    await act(async () => {
      await vi.advanceTimersByTimeAsync(0);
      await new Promise<void>((resolve) => setImmediate(resolve));
    });
  }
}

/** Lets `ms` of fake time pass, then the answers it asked for arrive. */
async function pass(ms: number) {
  await act(() => vi.advanceTimersByTimeAsync(ms));
  await settle();
}

function reads(fetchMock: ReturnType<typeof mockApi>, path: string): number {
  return requests(fetchMock, 'GET', path).length;
}

describe('ExperimentsPage', () => {
  it('says the page is not available when the server answers 404, as the other admin pages do', async () => {
    server({ 'GET /api/admin/experiments': { status: 404, body: { error: 'not_found', message: 'Not found' } } });
    renderPage();
    expect(await screen.findByText(NOT_AVAILABLE)).toBeTruthy();
    expect(screen.getByRole('heading', { level: 1, name: 'Experiments' })).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Return to Home' })).toBeTruthy();
  });

  it('lists the experiments with their scope, status, start and how a running one stands', async () => {
    server();
    renderPage();
    const table = await screen.findByRole('table');
    const running = within(table).getByTestId('exp-row-exp1');
    expect(within(running).getByRole('link', { name: 'Shorter greeting' }).getAttribute('href')).toBe(
      '/admin/experiments?id=exp1',
    );
    expect(within(running).getByText('Chat funnel (/chat-help)')).toBeTruthy();
    expect(within(running).getByText('campaign 123')).toBeTruthy();
    expect(within(running).getByTestId('exp-status').textContent).toBe('Running');
    expect(within(running).getByText('2 Nov 2026')).toBeTruthy();
    expect(await within(running).findByText('B wins: 97.3 % chance to beat A, expected loss 0.0004.')).toBeTruthy();

    const draft = within(table).getByTestId('exp-row-exp2');
    expect(within(draft).getByTestId('exp-status').textContent).toBe('Draft');
    expect(within(draft).getByText('Not yet')).toBeTruthy();
    expect(within(within(table).getByTestId('exp-row-exp0')).getByText('every visitor')).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Back to the dashboard' }).getAttribute('href')).toBe('/admin');
    expect(screen.getByRole('link', { name: 'Flows' }).getAttribute('href')).toBe('/admin/flows');
  });

  it('creates a draft from “New experiment” and shows it', async () => {
    const created = experiment({ id: 'exp9', name: 'Greeting', status: 'draft', startedAt: null });
    const fetchMock = server({
      'POST /api/admin/experiments': { status: 201, body: created },
      'GET /api/admin/experiments/exp9': { body: detail({ experiment: created, history: [] }) },
    });
    const router = renderPage();
    fireEvent.click(await screen.findByRole('button', { name: 'New experiment' }));
    expect(router.state.location.search).toBe('?new=');
    fireEvent.change(await screen.findByLabelText('Experiment name'), { target: { value: 'Greeting' } });
    fireEvent.click(screen.getByRole('button', { name: 'Create draft' }));

    expect(await screen.findByText('The draft “Greeting” is saved. Start it when it is ready.')).toBeTruthy();
    expect(router.state.location.search).toBe('?id=exp9');
    expect(await screen.findByRole('heading', { level: 2, name: /Greeting/ })).toBeTruthy();
    expect(requests(fetchMock, 'POST', '/api/admin/experiments')).toHaveLength(1);
    expect((requests(fetchMock, 'POST', '/api/admin/experiments')[0] as { name: string }).name).toBe('Greeting');
  });

  it('goes back to the list when a new experiment is cancelled', async () => {
    server();
    const router = renderPage('/admin/experiments?new');
    fireEvent.click(await screen.findByRole('button', { name: 'Cancel' }));
    expect(router.state.location.search).toBe('');
    expect(await screen.findByRole('button', { name: 'New experiment' })).toBeTruthy();
  });
});

describe('one experiment', () => {
  it('shows how it stands, its figures, its steps and its history', async () => {
    server();
    renderPage('/admin/experiments?id=exp1');
    expect(await screen.findByTestId('exp-headline')).toBeTruthy();
    expect(screen.getByTestId('exp-headline').textContent).toBe('B wins: 97.3 % chance to beat A, expected loss 0.0004.');
    expect(screen.getByRole('heading', { level: 2, name: /Shorter greeting/ })).toBeTruthy();
    expect(screen.getByTestId('exp-status').textContent).toBe('Running');
    const actions = within(screen.getByTestId('exp-actions'));
    expect(actions.getAllByRole('button').map((button) => button.textContent)).toEqual([
      'Pause',
      'Stop',
      'Promote arm B (Short)',
      'Promote A (Control)',
      'Promote B (Short)',
    ]);
    expect(actions.getByText('Promote an arm')).toBeTruthy();
    expect(screen.getByRole('region', { name: 'Figures by arm' })).toBeTruthy();
    expect(screen.getAllByTestId('exp-history-entry').map((entry) => plainText(entry.textContent))).toEqual([
      'Started2 Nov 2026, 10:00 UTC by ann@example.com',
      'Created1 Nov 2026, 09:00 UTC by ann@example.com',
    ]);
    expect(screen.getByText(/Refundable-fee chat \(\/Chat-Help-2\), 50\s% of visitors/)).toBeTruthy();
  });

  it('offers Edit, Start and Archive for a draft, and edits it in place', async () => {
    const fetchMock = server({
      'PUT /api/admin/experiments/exp2': { body: { ...DRAFT, name: 'Offer test 2' } },
    });
    const router = renderPage('/admin/experiments?id=exp2');
    const actions = within(await screen.findByTestId('exp-actions'));
    expect(actions.getAllByRole('button').map((button) => button.textContent)).toEqual(['Edit', 'Start', 'Archive']);
    expect(screen.queryByTestId('exp-analysis')).toBeNull();

    fireEvent.click(actions.getByRole('button', { name: 'Edit' }));
    expect(router.state.location.search).toBe('?id=exp2&edit=');
    const name = (await screen.findByLabelText('Experiment name')) as HTMLInputElement;
    expect(name.value).toBe('Offer test');
    fireEvent.change(name, { target: { value: 'Offer test 2' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save draft' }));
    expect(await screen.findByText('The draft “Offer test 2” is saved.')).toBeTruthy();
    expect(router.state.location.search).toBe('?id=exp2');
    expect((requests(fetchMock, 'PUT', '/api/admin/experiments/exp2')[0] as { name: string }).name).toBe('Offer test 2');
  });

  it('starts behind a confirmation, and says why when another experiment overlaps', async () => {
    let overlaps = true;
    const fetchMock = server({
      'POST /api/admin/experiments/exp2/start': () =>
        overlaps
          ? { status: 409, body: { error: 'overlaps', message: 'It overlaps “Shorter greeting”, which is running on campaign 123.' } }
          : { body: { ...DRAFT, status: 'running', startedAt: '2026-11-21T10:00:00Z' } },
    });
    renderPage('/admin/experiments?id=exp2');
    fireEvent.click(within(await screen.findByTestId('exp-actions')).getByRole('button', { name: 'Start' }));
    const dialog = await screen.findByRole('dialog', { name: 'Start “Offer test”' });
    expect(dialog.textContent).toContain('A started experiment can no longer be edited.');
    expect(requests(fetchMock, 'POST', '/api/admin/experiments/exp2/start')).toEqual([]);
    fireEvent.click(within(dialog).getByRole('button', { name: 'Start' }));
    expect(await within(dialog).findByText('It overlaps “Shorter greeting”, which is running on campaign 123.')).toBeTruthy();

    overlaps = false;
    fireEvent.click(within(dialog).getByRole('button', { name: 'Start' }));
    expect(await screen.findByText('Started: new visitors of its scope are split between the arms.')).toBeTruthy();
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(requests(fetchMock, 'POST', '/api/admin/experiments/exp2/start')).toEqual([null, null]);
  });

  it('resumes a paused one, and cancels without asking the server', async () => {
    const paused = experiment({ status: 'paused' });
    const fetchMock = server({ 'GET /api/admin/experiments/exp1': { body: detail({ experiment: paused }) } });
    renderPage('/admin/experiments?id=exp1');
    const actions = within(await screen.findByTestId('exp-actions'));
    expect(actions.queryByRole('button', { name: 'Pause' })).toBeNull();
    fireEvent.click(actions.getByRole('button', { name: 'Resume' }));
    const dialog = await screen.findByRole('dialog', { name: 'Resume “Shorter greeting”' });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(requests(fetchMock, 'POST', '/api/admin/experiments/exp1/start')).toEqual([]);
  });

  it('promotes the arm the rule picks, or any arm from the menu, each behind a confirmation', async () => {
    const fetchMock = server({
      'POST /api/admin/experiments/exp1/promote': (init) => {
        const { arm } = JSON.parse(String(init?.body)) as { arm: string };
        return arm === 'a'
          ? { status: 422, body: { error: 'invalid', message: 'Not promoted.', problems: [{ field: 'arm', message: 'The control changes nothing.' }] } }
          : { body: { ...RUNNING, status: 'stopped', winner: arm, promotedAt: '2026-11-21T10:00:00Z', promotedBy: 'ann@example.com' } };
      },
    });
    renderPage('/admin/experiments?id=exp1');
    const actions = within(await screen.findByTestId('exp-actions'));

    // Not the rule's pick: the dialog says so first, and its button says “anyway”.
    fireEvent.click(actions.getByRole('button', { name: 'Promote A (Control)' }));
    let dialog = await screen.findByRole('dialog', { name: 'Promote arm A (Control)' });
    expect(plainText(dialog.querySelector('.confirm-dialog__text')?.textContent)).toMatch(
      /^The rule picks arm B \(Short\), not this arm \(B wins: 97\.3 % chance to beat A, expected loss 0\.0004\): promoting A now publishes it on today’s figures\. The routing’s choice of flow stays/,
    );
    expect(within(dialog).queryByRole('button', { name: 'Promote' })).toBeNull();
    fireEvent.click(within(dialog).getByRole('button', { name: 'Promote anyway' }));
    expect(await within(dialog).findByText('The control changes nothing.')).toBeTruthy();
    fireEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }));

    // The rule's pick, beside its sentence.
    fireEvent.click(screen.getByRole('button', { name: 'Promote arm B (Short)' }));
    dialog = await screen.findByRole('dialog', { name: 'Promote arm B (Short)' });
    // The rule's pick: as before, no warning.
    expect(plainText(dialog.querySelector('.confirm-dialog__text')?.textContent)).toBe(
      'Its flow version default v3 is published and routed for Chat funnel (/chat-help): campaign 123, and its offer, Refundable-fee chat (/Chat-Help-2), is routed for the scope’s campaigns. The experiment stops now, and this cannot be undone here.',
    );
    expect(within(dialog).queryByRole('button', { name: 'Promote anyway' })).toBeNull();
    fireEvent.click(within(dialog).getByRole('button', { name: 'Promote' }));
    expect(await screen.findByText(/Promoted arm B \(Short\)/)).toBeTruthy();
    expect(requests(fetchMock, 'POST', '/api/admin/experiments/exp1/promote')).toEqual([{ arm: 'a' }, { arm: 'b' }]);
  });

  it('warns before promoting an arm while the rule has not picked a winner, with “Promote anyway”', async () => {
    const status = 'Collecting: the rule needs 9 more visitors in an arm and 1 more day before it decides.';
    const fetchMock = server({
      'GET /api/admin/experiments/exp1': {
        body: detail({
          analysis: analysis({
            promotable: null,
            decision: { state: 'collecting', exposuresNeeded: 9, daysNeeded: 1 },
            status,
          }),
        }),
      },
      'POST /api/admin/experiments/exp1/promote': {
        body: { ...RUNNING, status: 'stopped', winner: 'b', promotedAt: '2026-11-21T10:00:00Z', promotedBy: 'ann@example.com' },
      },
    });
    renderPage('/admin/experiments?id=exp1');
    const actions = within(await screen.findByTestId('exp-actions'));
    // No pick: only the menu offers to promote.
    expect(actions.queryByRole('button', { name: 'Promote arm B (Short)' })).toBeNull();
    fireEvent.click(actions.getByRole('button', { name: 'Promote B (Short)' }));
    const dialog = await screen.findByRole('dialog', { name: 'Promote arm B (Short)' });
    const text = plainText(dialog.querySelector('.confirm-dialog__text')?.textContent);
    expect(text).toBe(
      'The rule has not picked a winner yet (Collecting: the rule needs 9 more visitors in an arm and 1 more day before it decides): promoting B now publishes it on today’s figures. ' +
        'Its flow version default v3 is published and routed for Chat funnel (/chat-help): campaign 123, and its offer, Refundable-fee chat (/Chat-Help-2), is routed for the scope’s campaigns. The experiment stops now, and this cannot be undone here.',
    );
    expect(within(dialog).queryByRole('button', { name: 'Promote' })).toBeNull();
    fireEvent.click(within(dialog).getByRole('button', { name: 'Promote anyway' }));
    expect(await screen.findByText(/Promoted arm B \(Short\)/)).toBeTruthy();
    expect(requests(fetchMock, 'POST', '/api/admin/experiments/exp1/promote')).toEqual([{ arm: 'b' }]);
  });

  it('reads the rule back against the control, each count in the singular or plural', async () => {
    server({
      'GET /api/admin/experiments/exp1': {
        body: detail({
          experiment: experiment({
            rule: { minExposures: 1, minDays: 1, chance: 0.95, maxLoss: 0.002 },
            goal: { metric: 'trial_paid', days: 1 },
          }),
        }),
      },
    });
    renderPage('/admin/experiments?id=exp1');
    await screen.findByTestId('exp-headline');
    const summary = (term: string) =>
      plainText(
        screen
          .getAllByRole('term')
          .find((element) => element.textContent === term)
          ?.parentElement?.querySelector('dd')?.textContent,
      );
    expect(summary('A winner when')).toBe(
      'at least 1 visitor per arm and 1 day, a 95.0 % chance to beat the control (A), an expected loss of at most 0.20 pp. You promote it.',
    );
    expect(summary('Goal')).toBe('Trial paid within 1 day');
    expect(screen.queryByText(/chance to beat the others/)).toBeNull();
  });

  it('reads the default rule back in the plural', async () => {
    server();
    renderPage('/admin/experiments?id=exp1');
    expect(
      await screen.findByText(/at least 1,000 visitors per arm and 7 days, a 95\.0\s% chance to beat the control \(A\)/),
    ).toBeTruthy();
    expect(screen.getByText('Trial paid within 14 days')).toBeTruthy();
  });

  it('shows the warning of a sample ratio mismatch', async () => {
    server({
      'GET /api/admin/experiments/exp1': {
        body: detail({
          analysis: analysis({
            srm: { pValue: 0.0003, warning: true, expectedShares: [0.5, 0.5], observedShares: [0.521, 0.479] },
          }),
        }),
      },
    });
    renderPage('/admin/experiments?id=exp1');
    expect(plainText((await screen.findByTestId('exp-srm')).textContent)).toContain(
      'the arms got 52.1 % / 47.9 % of visitors where 50 % / 50 % was set (p = 0.0003)',
    );
  });

  it('says so when there is no such experiment', async () => {
    server({ 'GET /api/admin/experiments/nope': { status: 404, body: { error: 'not_found', message: 'Not found' } } });
    renderPage('/admin/experiments?id=nope');
    expect(await screen.findByText('There is no such experiment.')).toBeTruthy();
  });
});

describe('reading the figures again', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reads a running experiment every 5 seconds, and a draft once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    let exposures = 1200;
    const fetchMock = server({
      'GET /api/admin/experiments/exp1': () => {
        const answer = detail();
        answer.analysis = analysis({ status: `Collecting: ${exposures} exposures.` });
        return { body: answer };
      },
    });
    renderPage('/admin/experiments?id=exp1');
    await pass(50);
    expect(screen.getByTestId('exp-headline').textContent).toBe('Collecting: 1200 exposures.');
    expect(reads(fetchMock, '/api/admin/experiments/exp1')).toBe(1);

    exposures = 1300;
    await pass(POLL_MS - 100);
    expect(reads(fetchMock, '/api/admin/experiments/exp1')).toBe(1);
    await pass(200);
    expect(reads(fetchMock, '/api/admin/experiments/exp1')).toBe(2);
    expect(screen.getByTestId('exp-headline').textContent).toBe('Collecting: 1300 exposures.');
    await pass(POLL_MS);
    await pass(POLL_MS);
    expect(reads(fetchMock, '/api/admin/experiments/exp1')).toBe(4);
  });

  it('does not read a draft again', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const fetchMock = server();
    renderPage('/admin/experiments?id=exp2');
    await pass(POLL_MS * 3);
    expect(reads(fetchMock, '/api/admin/experiments/exp2')).toBe(1);
  });

  it('never reads twice within 600 ms, even right after a step', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const fetchMock = server({ 'POST /api/admin/experiments/exp1/pause': { body: { ...RUNNING, status: 'paused' } } });
    renderPage('/admin/experiments?id=exp1');
    await pass(50);
    expect(reads(fetchMock, '/api/admin/experiments/exp1')).toBe(1);

    fireEvent.click(within(screen.getByTestId('exp-actions')).getByRole('button', { name: 'Pause' }));
    fireEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Pause' }));
    await pass(100);
    // Paused: the step is done, the experiment read again only once 600 ms have passed since the last read.
    expect(screen.getByText('Paused: no new visitors are put in an arm until you resume it.')).toBeTruthy();
    expect(reads(fetchMock, '/api/admin/experiments/exp1')).toBe(1);
    await pass(MIN_GAP_MS);
    expect(reads(fetchMock, '/api/admin/experiments/exp1')).toBe(2);
  });
});
