import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { vi } from 'vitest';
import { PublicConfigProvider } from '../../lib/public-config';
import { mockApi } from '../../test/fetch-mock';
import { DEFAULT_HELP_INTRO } from './api';
import { browserLocation } from '../../lib/browser';
import { HelpFunnelPage } from './HelpFunnelPage';

const ANSWER = {
  summary: 'Printer shows offline on Windows',
  intro: "Printers often drop off the network after an update. Here's how to get yours back.",
  aiEvents: [
    { time: '2025-05-04T10:00:01Z', kind: 'summary', outcome: 'ok', durationMs: 812 },
    { time: '2025-05-04T10:00:02Z', kind: 'intro', outcome: 'timeout', durationMs: 3000 },
  ],
};
const STARTED = { sessionId: 'cs_1', trackingSessionId: 't1', url: '/demo-checkout/cs_1' };

function renderHelp(path = '/get-help', { withConfig = false } = {}) {
  const router = createMemoryRouter(
    [
      { path: '/get-help', element: <HelpFunnelPage /> },
      { path: '/funnel', element: <HelpFunnelPage /> },
    ],
    { initialEntries: [path] },
  );
  const page = <RouterProvider router={router} />;
  render(withConfig ? <PublicConfigProvider>{page}</PublicConfigProvider> : page);
  return router;
}

function issueField() {
  return screen.getByLabelText('Describe your issue') as HTMLTextAreaElement;
}

function requestBody(fetchMock: ReturnType<typeof mockApi>, path: string): unknown {
  const call = fetchMock.mock.calls.find(([url]) => url === path);
  return call ? JSON.parse(String(call[1]?.body)) : undefined;
}

function watchRedirects() {
  return vi.spyOn(browserLocation, 'assign').mockImplementation(() => {});
}

async function reachSolution(fetchMock: ReturnType<typeof mockApi>) {
  fireEvent.change(issueField(), { target: { value: 'my printer is offline' } });
  fireEvent.click(screen.getByRole('button', { name: 'Get Help Now' }));
  await screen.findByRole('heading', { level: 1, name: 'Solution Found:' });
  return fetchMock;
}

afterEach(() => {
  vi.useRealTimers();
  window.sessionStorage.clear();
});

describe('HelpFunnelPage', () => {
  it('asks for the issue under the default headline', () => {
    mockApi();
    renderHelp('/funnel');
    expect(screen.getByRole('heading', { level: 1 }).textContent).toBe('Need Instant Online Help?');
    expect(screen.getByText('Enter your issue in the form below to receive an instant answer')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Get Help Now' })).toBeTruthy();
  });

  it('names the keyword in the headline', () => {
    mockApi();
    renderHelp('/get-help?keyword=gmail%20password');
    expect(screen.getByRole('heading', { level: 1 }).textContent).toBe(
      'Need Gmail Password Help? Get Instant Expert Help Now!',
    );
  });

  it('needs an issue and asks nothing of the server without one', () => {
    const fetchMock = mockApi();
    renderHelp();
    fireEvent.change(issueField(), { target: { value: '   ' } });
    fireEvent.click(screen.getByRole('button', { name: 'Get Help Now' }));
    expect(screen.getByRole('alert').textContent).toBe('Please describe your issue so we can help.');
    expect(document.activeElement).toBe(issueField());
    expect(requestBody(fetchMock, '/api/funnels/help')).toBeUndefined();

    fireEvent.change(issueField(), { target: { value: 'h' } });
    expect(screen.queryByRole('alert')).toBeNull();
  });

  it('analyses the issue, then shows the solution teaser behind the paywall', async () => {
    let answer: (reply: { body: unknown }) => void = () => {};
    const fetchMock = mockApi({ 'POST /api/funnels/help': () => new Promise((resolve) => (answer = resolve)) });
    renderHelp('/get-help?keyword=printer&campaignid=77&utm_source=google');

    fireEvent.change(issueField(), { target: { value: '  My printer is offline  ' } });
    fireEvent.click(screen.getByRole('button', { name: 'Get Help Now' }));
    const busy = await screen.findByRole('button', { name: 'Analyzing Issue...' });
    expect((busy as HTMLButtonElement).disabled).toBe(true);
    expect(requestBody(fetchMock, '/api/funnels/help')).toEqual({
      issue: 'My printer is offline',
      keyword: 'printer',
      campaignid: '77',
      utm_source: 'google',
    });

    answer({ body: ANSWER });
    const heading = await screen.findByRole('heading', { level: 1, name: 'Solution Found:' });
    // Focus moves in an effect after the step renders: on a busy machine, a moment later.
    await waitFor(() => expect(document.activeElement).toBe(heading));
    expect(screen.getByText(ANSWER.summary)).toBeTruthy();
    expect(screen.getByText(ANSWER.intro)).toBeTruthy();
    expect(screen.getByRole('heading', { level: 2, name: 'Apply the solution' })).toBeTruthy();
    expect(screen.getByRole('heading', { level: 2, name: 'Prevent future issues' })).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Fix my issue for free >' })).toBeTruthy();
  });

  it('submits on Enter and leaves Shift+Enter to make a new line', async () => {
    const fetchMock = mockApi({ 'POST /api/funnels/help': { body: ANSWER } });
    renderHelp();
    fireEvent.change(issueField(), { target: { value: 'wifi drops' } });
    expect(fireEvent.keyDown(issueField(), { key: 'Enter', shiftKey: true })).toBe(true);
    expect(requestBody(fetchMock, '/api/funnels/help')).toBeUndefined();

    expect(fireEvent.keyDown(issueField(), { key: 'Enter' })).toBe(false);
    await screen.findByRole('heading', { level: 1, name: 'Solution Found:' });
    expect(requestBody(fetchMock, '/api/funnels/help')).toEqual({ issue: 'wifi drops' });
  });

  it('still shows the solution step, without a summary, when the server fails', async () => {
    mockApi({ 'POST /api/funnels/help': { status: 503, body: { error: 'unavailable', message: 'Try later' } } });
    renderHelp();
    fireEvent.change(issueField(), { target: { value: 'my email is gone' } });
    fireEvent.click(screen.getByRole('button', { name: 'Get Help Now' }));
    await screen.findByRole('heading', { level: 1, name: 'Solution Found:' });
    expect(screen.getByText(DEFAULT_HELP_INTRO)).toBeTruthy();
    expect(document.querySelector('.help-funnel__summary')).toBeNull();
  });

  it('shows no summary when the server skipped it', async () => {
    mockApi({ 'POST /api/funnels/help': { body: { summary: null, intro: 'Let us sort this out.' } } });
    renderHelp();
    fireEvent.change(issueField(), { target: { value: 'help' } });
    fireEvent.click(screen.getByRole('button', { name: 'Get Help Now' }));
    expect(await screen.findByText('Let us sort this out.')).toBeTruthy();
    expect(document.querySelector('.help-funnel__summary')).toBeNull();
  });

  it('starts the trial checkout with the funnel attribution and goes there', async () => {
    const assign = watchRedirects();
    let answer: (reply: { body: unknown }) => void = () => {};
    const fetchMock = mockApi({
      'POST /api/funnels/help': { body: ANSWER },
      'POST /api/create-checkout.js': () => new Promise((resolve) => (answer = resolve)),
    });
    renderHelp('/funnel?keyword=printer&campaignid=77&gclid=g1');
    await reachSolution(fetchMock);

    fireEvent.click(screen.getByRole('button', { name: 'Fix my issue for free >' }));
    expect(((await screen.findByRole('button', { name: 'Processing...' })) as HTMLButtonElement).disabled).toBe(true);
    expect(requestBody(fetchMock, '/api/create-checkout.js')).toEqual({
      source: 'help_funnel',
      isTrial: true,
      keyword: 'printer',
      campaignid: '77',
      gclid: 'g1',
      headline: 'Need Printer Help? Get Instant Expert Help Now!',
      firstTouch: { keyword: 'printer', campaignid: '77', gclid: 'g1' },
      cancelUrl: '/funnel?keyword=printer&campaignid=77&gclid=g1&canceled=true',
    });

    answer({ body: STARTED });
    expect(await screen.findByRole('heading', { level: 1, name: 'Redirecting to checkout...' })).toBeTruthy();
    expect(assign).toHaveBeenCalledExactlyOnceWith('/demo-checkout/cs_1');
  });

  it('back from a canceled checkout, shows the solution the visitor had, and says nothing was charged', async () => {
    watchRedirects();
    const fetchMock = mockApi({
      'POST /api/funnels/help': { body: ANSWER },
      'POST /api/create-checkout.js': { body: STARTED },
    });
    renderHelp('/funnel?keyword=printer');
    await reachSolution(fetchMock);
    fireEvent.click(screen.getByRole('button', { name: 'Fix my issue for free >' }));
    await screen.findByRole('heading', { level: 1, name: 'Redirecting to checkout...' });
    cleanup();

    // The checkout's Cancel brings the browser back to the cancel URL: a new page load.
    const router = renderHelp('/funnel?keyword=printer&canceled=true');
    expect(screen.getByRole('heading', { level: 1, name: 'Solution Found:' })).toBeTruthy();
    expect(screen.getByText('Printer shows offline on Windows')).toBeTruthy();
    expect(screen.getByText(ANSWER.intro)).toBeTruthy();
    expect(screen.getByRole('status').textContent).toBe(
      'Your checkout was canceled, and nothing was charged. Your solution is still here.',
    );
    expect(screen.getByRole('button', { name: 'Fix my issue for free >' })).toBeTruthy();
    // What it costs is said under the spec's 'free'.
    expect(screen.getByText(/\$1 setup fee \(refundable at any time\), then \$20\/month/)).toBeTruthy();
    await waitFor(() => expect(router.state.location.search).toBe('?keyword=printer'));
  });

  it.each([
    ['an error answer', { status: 500, body: { error: 'internal', message: 'Something went wrong' } }],
    ['an answer without a url', { body: { sessionId: 'cs_1', trackingSessionId: 't1', url: null } }],
  ])('silently falls back to /?success=demo on %s', async (_case, reply) => {
    const assign = watchRedirects();
    const fetchMock = mockApi({ 'POST /api/funnels/help': { body: ANSWER }, 'POST /api/create-checkout.js': reply });
    renderHelp();
    await reachSolution(fetchMock);
    fireEvent.click(screen.getByRole('button', { name: 'Fix my issue for free >' }));
    await waitFor(() => expect(assign).toHaveBeenCalledExactlyOnceWith('/?success=demo'));
  });

  it('falls back when the network fails', async () => {
    const assign = watchRedirects();
    const fetchMock = mockApi({ 'POST /api/funnels/help': { body: ANSWER } });
    renderHelp();
    await reachSolution(fetchMock);
    vi.stubGlobal('fetch', vi.fn(async () => Promise.reject(new TypeError('Failed to fetch'))));
    fireEvent.click(screen.getByRole('button', { name: 'Fix my issue for free >' }));
    await waitFor(() => expect(assign).toHaveBeenCalledExactlyOnceWith('/?success=demo'));
  });

  it('falls back 5 seconds after the button when the checkout has not answered', async () => {
    const assign = watchRedirects();
    let answer: (reply: { body: unknown }) => void = () => {};
    const fetchMock = mockApi({
      'POST /api/funnels/help': { body: ANSWER },
      'POST /api/create-checkout.js': () => new Promise((resolve) => (answer = resolve)),
    });
    renderHelp();
    await reachSolution(fetchMock);

    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    fireEvent.click(screen.getByRole('button', { name: 'Fix my issue for free >' }));
    await act(() => vi.advanceTimersByTimeAsync(4_999));
    expect(assign).not.toHaveBeenCalled();
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(assign.mock.calls).toEqual([['/?success=demo']]);

    // A late answer does not send the visitor anywhere else.
    await act(async () => answer({ body: STARTED }));
    expect(assign.mock.calls).toEqual([['/?success=demo']]);
  });

  it('falls back when the browser is still here 5 seconds after the redirect', async () => {
    const assign = watchRedirects();
    const fetchMock = mockApi({
      'POST /api/funnels/help': { body: ANSWER },
      'POST /api/create-checkout.js': { body: STARTED },
    });
    renderHelp();
    await reachSolution(fetchMock);

    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    fireEvent.click(screen.getByRole('button', { name: 'Fix my issue for free >' }));
    await act(() => vi.advanceTimersByTimeAsync(100));
    expect(assign.mock.calls).toEqual([['/demo-checkout/cs_1']]);
    await act(() => vi.advanceTimersByTimeAsync(4_900));
    expect(assign.mock.calls).toEqual([['/demo-checkout/cs_1'], ['/?success=demo']]);
  });

  it('lists the last AI calls, newest first, when debug tools are on', async () => {
    const fetchMock = mockApi({ 'POST /api/funnels/help': { body: ANSWER } });
    renderHelp('/get-help', { withConfig: true });
    const overlay = await screen.findByRole('complementary', { name: 'AI calls (debug)' });
    expect(within(overlay).getByText('No AI calls yet.')).toBeTruthy();

    await reachSolution(fetchMock);
    const items = within(overlay).getAllByRole('listitem');
    expect(items.map((item) => item.querySelector('.ai-calls__kind')?.textContent)).toEqual(['intro', 'summary']);
    expect(items[0].textContent).toContain('timeout');
    expect(items[0].textContent).toContain('3000 ms');
    expect(items[1].textContent).toContain('812 ms');
  });

  it('shows no AI call list without debug tools', async () => {
    const fetchMock = mockApi({
      'GET /api/public-config': {
        body: { productName: 'HelpNow', assistantName: 'Emma', supportEmail: '', debugTools: false },
      },
      'POST /api/funnels/help': { body: ANSWER },
    });
    renderHelp('/get-help', { withConfig: true });
    await reachSolution(fetchMock);
    // The configuration was asked for before the issue, so its answer is in by now.
    expect(fetchMock.mock.calls[0]?.[0]).toBe('/api/public-config');
    expect(screen.queryByRole('complementary', { name: 'AI calls (debug)' })).toBeNull();
  });
});
