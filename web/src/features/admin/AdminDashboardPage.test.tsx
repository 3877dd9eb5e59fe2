import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { PublicConfigProvider } from '../../lib/public-config';
import { SessionProvider } from '../../lib/session';
import { mockApi } from '../../test/fetch-mock';
import { AdminDashboardPage, LOAD_FAILED, NO_COST } from './AdminDashboardPage';
import { NOT_AVAILABLE } from './sections';
import { perMinute } from './LivePanel';
import { alignedDays, dayTicks, tickLabel } from './DailyChart';
import { DATE_SETTLE_MS, RANGE_ORDER } from './FilterBar';
import { change, dayKey, formatRange, previousPeriod } from './format';
import { PRESETS, readState, writeState } from './url-state';
import { NO_FIGURES, type Cost, type Figures, type Live, type Report, type Row } from './api';

const CHAT: Figures = {
  ...NO_FIGURES,
  visitors: 40,
  first_message: 30,
  final_message: 20,
  checkout: 10,
  trial: 8,
  paid: 4,
  retained: 2,
  fee_cents: 800,
  fee_refund_cents: 100,
  subscription_cents: 8000,
  net_cents: 8700,
  net_cents_per_visitor: 217,
};

const HELP: Figures = { ...NO_FIGURES, visitors: 60, first_message: 50, trial: 2, net_cents: 4000, net_cents_per_visitor: 67 };

function row(key: string, figures: Partial<Figures>, extra: Partial<Row> = {}): Row {
  return { ...NO_FIGURES, ...figures, key, ...extra };
}

function sum(figures: Figures[]): Figures {
  const total = { ...NO_FIGURES };
  for (const each of figures) {
    for (const name of Object.keys(NO_FIGURES) as (keyof Figures)[]) total[name] += each[name];
  }
  total.net_cents_per_visitor = total.visitors > 0 ? Math.round(total.net_cents / total.visitors) : 0;
  return total;
}

/** The server's answer: its total follows the funnel chosen, as the contract says. */
function report(url: URL, changes: Partial<Report> = {}): Report {
  const by = (url.searchParams.get('by') ?? 'campaign') as Report['by'];
  const funnel = url.searchParams.get('funnel');
  const rows: Record<string, Row[]> = {
    campaign: [row('c1', { visitors: 30, trial: 7, net_cents: 8000 }), row('', { visitors: 10, trial: 1 })],
    keyword: [row('printer', { visitors: 20, trial: 5 }), row('wifi', { visitors: 10, trial: 2 })],
    day: [row('2026-11-20', { visitors: 40, trial: 8 })],
  };
  const funnels = [
    { ...HELP, funnel: 'help_funnel' },
    { ...CHAT, funnel: 'chat_funnel' },
  ];
  return {
    from: url.searchParams.get('from') ?? '',
    to: url.searchParams.get('to') ?? '',
    by,
    funnel,
    campaign: url.searchParams.get('campaign'),
    keyword: url.searchParams.get('keyword'),
    funnels,
    total: funnel ? (funnels.find((each) => each.funnel === funnel) ?? NO_FIGURES) : sum(funnels),
    rows: rows[by] ?? [],
    pending: { paid_from: null, retained_from: null },
    ...changes,
  };
}

const LIVE: Live = {
  funnelConversations: 12,
  memberChats: 3,
  realtimeConnections: 15,
  messagesStored: 500,
  aiCalls: 40,
  aiFailures: 1,
  aiScripted: 6,
};

/** The other tools of the page, answered quietly. */
const TOOLS = {
  'GET /api/admin/live': { body: LIVE },
  'GET /api/admin/held': { body: { held: [] } },
  'GET /api/admin/costs': { body: { from: null, to: null, days: 0, campaigns: 0, cost_cents: 0 } },
};

function renderPage(path = '/admin') {
  const router = createMemoryRouter(
    [
      { path: '/admin', element: <AdminDashboardPage /> },
      { path: '/', element: <h1>Home</h1> },
    ],
    { initialEntries: [path] },
  );
  render(
    <PublicConfigProvider>
      <SessionProvider>
        <RouterProvider router={router} />
      </SessionProvider>
    </PublicConfigProvider>,
  );
  return router;
}

/** What the page asked the dashboard for, each request's query. */
function asked(fetchMock: ReturnType<typeof mockApi>): URLSearchParams[] {
  return fetchMock.mock.calls
    .map(([input]) => new URL(String(input), 'http://localhost'))
    .filter((url) => url.pathname === '/api/admin/dashboard')
    .map((url) => url.searchParams);
}

function tile(region: string, label: string) {
  const dt = within(screen.getByRole('region', { name: region })).getByText(label);
  return dt.nextElementSibling;
}

const cellTexts = (tableRow: HTMLElement) =>
  within(tableRow)
    .getAllByRole('cell')
    .map((cell) => cell.textContent);

describe('AdminDashboardPage', () => {
  it('shows each funnel step with its rate, the revenue, and the campaigns, and drills into a campaign', async () => {
    const fetchMock = mockApi({ ...TOOLS, 'GET /api/admin/dashboard': (_init, url) => ({ body: report(url) }) });
    renderPage();

    const funnels = await screen.findByRole('table', { name: /how far they got/ });
    const chat = within(funnels).getByRole('row', { name: /Chat funnel/ });
    expect(within(chat).getByText('40')).toBeTruthy();
    // 30 of 40 visitors sent a first message.
    expect(within(chat).getByText('75.0%')).toBeTruthy();
    expect(within(chat).getByText('$87.00')).toBeTruthy();
    expect(tile('Revenue', 'Setup fees taken')?.textContent).toBe('$8.00');
    // The funnels' totals: $127.00 from 100 visitors.
    expect(tile('Revenue', 'Net per visitor')?.textContent).toBe('$1.27');
    expect(await screen.findByText('Conversations open')).toBeTruthy();
    // Provider errors and time-outs are failures; the offline helper's designed replies are not.
    expect(tile('Live', 'AI calls failed since start')?.textContent).toBe('1 of 40');
    expect(tile('Live', 'Scripted replies since start')?.textContent).toBe('6');

    const campaigns = screen.getByRole('table', { name: /Choose a campaign/ });
    expect(within(campaigns).getByRole('row', { name: /\(none\)/ })).toBeTruthy();
    const csv = screen.getAllByRole('link', { name: 'Download CSV' }).map((link) => link.getAttribute('href'));
    expect(csv.some((href) => href?.includes('format=csv') && href.includes('by=campaign'))).toBe(true);

    fireEvent.click(within(campaigns).getByRole('button', { name: 'c1' }));
    const keywords = await screen.findByRole('heading', { name: 'Keywords of campaign c1' });
    expect(keywords).toBeTruthy();
    expect(await screen.findByRole('row', { name: /printer/ })).toBeTruthy();
    expect(asked(fetchMock).some((query) => query.get('by') === 'keyword' && query.get('campaign') === 'c1')).toBe(true);

    fireEvent.click(screen.getByRole('button', { name: 'Back to all campaigns' }));
    expect(await screen.findByRole('heading', { name: 'By campaign' })).toBeTruthy();
  });

  it('sorts a table by the column clicked, and back', async () => {
    // Orders that differ by visitors, by name and by net revenue, so a sort that did nothing, or
    // sorted by another column, or the wrong way, shows.
    const campaigns: Row[] = [
      row('alpha', { visitors: 30, net_cents: 90_000 }),
      row('bravo', { visitors: 50, net_cents: 10_000 }),
      row('charlie', { visitors: 10, net_cents: 50_000 }),
      row('delta', { visitors: 40, net_cents: 30_000 }),
      row('', { visitors: 20, net_cents: 70_000 }),
    ];
    mockApi({
      ...TOOLS,
      'GET /api/admin/dashboard': (_init, url) => {
        const body = report(url);
        return { body: body.by === 'campaign' ? { ...body, rows: campaigns } : body };
      },
    });
    const router = renderPage();
    const table = await screen.findByRole('table', { name: /Choose a campaign/ });
    const keys = () =>
      within(table)
        .getAllByRole('row')
        .slice(1)
        .map((tableRow) => within(tableRow).getByRole('rowheader').textContent);
    // The headers that show a sort (aria-sort other than 'none', or an arrow): name, aria-sort, arrow.
    const sorted = () =>
      within(table)
        .getAllByRole('columnheader')
        .map((header) => {
          const button = within(header).getByRole('button');
          const arrow = button.querySelector('[aria-hidden="true"]')?.textContent ?? '';
          return [button.firstChild?.textContent, header.getAttribute('aria-sort'), arrow];
        })
        .filter(([, ariaSort, arrow]) => ariaSort !== 'none' || arrow !== '');
    const click = (label: string) => fireEvent.click(within(table).getByRole('button', { name: label }));

    // At first by visitors, most first; the arrow names the order too.
    expect(keys()).toEqual(['bravo', 'delta', 'alpha', '(none)', 'charlie']);
    expect(sorted()).toEqual([['Visitors', 'descending', '▼']]);

    // A numeric column: a click on the sorted one reverses it, a second one turns it back.
    click('Visitors');
    await waitFor(() => expect(keys()).toEqual(['charlie', '(none)', 'alpha', 'delta', 'bravo']));
    expect(sorted()).toEqual([['Visitors', 'ascending', '▲']]);
    click('Visitors');
    await waitFor(() => expect(keys()).toEqual(['bravo', 'delta', 'alpha', '(none)', 'charlie']));
    expect(sorted()).toEqual([['Visitors', 'descending', '▼']]);

    // Another numeric column sorts largest first on its first click, and back.
    click('Net revenue');
    await waitFor(() => expect(keys()).toEqual(['alpha', '(none)', 'charlie', 'delta', 'bravo']));
    expect(sorted()).toEqual([['Net revenue', 'descending', '▼']]);
    click('Net revenue');
    await waitFor(() => expect(keys()).toEqual(['bravo', 'delta', 'charlie', '(none)', 'alpha']));
    expect(sorted()).toEqual([['Net revenue', 'ascending', '▲']]);

    // A text column sorts from A on its first click (the campaign-less row, '', first), and back.
    click('Campaign');
    await waitFor(() => expect(keys()).toEqual(['(none)', 'alpha', 'bravo', 'charlie', 'delta']));
    expect(sorted()).toEqual([['Campaign', 'ascending', '▲']]);
    click('Campaign');
    await waitFor(() => expect(keys()).toEqual(['delta', 'charlie', 'bravo', 'alpha', '(none)']));
    expect(sorted()).toEqual([['Campaign', 'descending', '▼']]);
    // The order is in the address, so a reload keeps it.
    expect(new URLSearchParams(router.state.location.search).get('sort')).toBe('-key');
  });

  // The server answers 404 to anyone but a signed-in admin; a lapsed session may get 401.
  it.each([404, 401])('is not available to anyone the server does not answer (%i)', async (status) => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'], shouldAdvanceTime: true });
    try {
      const refusal = { status, body: { error: status === 401 ? 'unauthorized' : 'not_found', message: 'Not found' } };
      const fetchMock = mockApi({
        'GET /api/admin/dashboard': refusal,
        'GET /api/admin/live': refusal,
        'GET /api/admin/held': refusal,
        'GET /api/admin/costs': refusal,
        'POST /api/admin/accounts/delete': refusal,
      });
      const liveCalls = () => fetchMock.mock.calls.filter(([input]) => String(input) === '/api/admin/live').length;
      renderPage();

      const notice = await screen.findByText(NOT_AVAILABLE);
      const page = notice.closest('section');
      expect(page).not.toBeNull();
      // What the page says, all of it: its title, the notice and the way home.
      expect(screen.getByRole('heading', { level: 1 }).textContent).toBe('Dashboard');
      expect(page?.textContent).toBe(`Dashboard${NOT_AVAILABLE}Return to Home`);
      expect(screen.getByRole('link', { name: 'Return to Home' }).getAttribute('href')).toBe('/');
      expect(screen.getAllByRole('heading').map((heading) => heading.textContent)).toEqual(['Dashboard']);
      expect(screen.getAllByRole('link').map((link) => link.textContent)).toEqual(['Return to Home']);
      // None of the dashboard: no filters, figures, tables, chart, live panel, CSV or deletion.
      expect(screen.queryByRole('table')).toBeNull();
      expect(document.querySelector('form, input, select, table, svg, canvas')).toBeNull();
      expect(screen.queryByRole('button')).toBeNull();
      expect(screen.queryByRole('alert')).toBeNull();
      expect(screen.queryByRole('status')).toBeNull();
      expect(screen.queryByText(/Live|Revenue|Funnels|Download CSV|Delete an account|Checkout debug/)).toBeNull();

      // Nor does it go on asking for the live figures: the panel it had begun with is gone.
      const before = liveCalls();
      expect(before).toBeLessThanOrEqual(1);
      await act(() => vi.advanceTimersByTimeAsync(30_000));
      expect(liveCalls()).toBe(before);
      expect(screen.getByText(NOT_AVAILABLE)).toBeTruthy();
    } finally {
      vi.useRealTimers();
    }
  });

  // Other failures are not a refusal: the page stays, says so, and can be tried again.
  it.each([403, 500])('says the dashboard could not be loaded when the server fails (%i)', async (status) => {
    let fail = true;
    const fetchMock = mockApi({
      ...TOOLS,
      'GET /api/admin/dashboard': (_init, url) =>
        fail ? { status, body: { error: 'internal', message: 'Something went wrong' } } : { body: report(url) },
    });
    renderPage();
    await waitFor(() => expect(screen.getByRole('alert').textContent).toBe(LOAD_FAILED));
    expect(screen.queryByText(NOT_AVAILABLE)).toBeNull();
    expect(screen.queryByRole('table', { name: /how far they got/ })).toBeNull();

    const tries = asked(fetchMock).length;
    fail = false;
    fireEvent.click(screen.getByRole('button', { name: 'Try again' }));
    expect(await screen.findByRole('table', { name: /how far they got/ })).toBeTruthy();
    expect(asked(fetchMock).length).toBeGreaterThan(tries);
    expect(screen.queryByText(LOAD_FAILED)).toBeNull();
  });

  it('says what is wrong with a range the server refuses', async () => {
    mockApi({
      ...TOOLS,
      'GET /api/admin/dashboard': {
        status: 400,
        body: { error: 'invalid_range', message: 'The start date must not be after the end date.' },
      },
    });
    renderPage();
    await waitFor(() =>
      expect(screen.getByRole('alert').textContent).toBe('The start date must not be after the end date.'),
    );
  });
});

describe('the view in the address', () => {
  const VIEW =
    '/admin?from=2026-11-01&to=2026-11-30&by=keyword&funnel=chat_funnel&campaign=c1&keyword=printer&compare=1&q=pri&sort=-trial';

  it('shows the view a link names, and asks the server for it', async () => {
    const fetchMock = mockApi({ ...TOOLS, 'GET /api/admin/dashboard': (_init, url) => ({ body: report(url) }) });
    renderPage(VIEW);
    expect(await screen.findByRole('heading', { name: 'Keyword printer of campaign c1' })).toBeTruthy();

    // Every control shows it.
    expect((screen.getByLabelText('From') as HTMLInputElement).value).toBe('2026-11-01');
    expect((screen.getByLabelText('To') as HTMLInputElement).value).toBe('2026-11-30');
    expect((screen.getByLabelText('Funnel') as HTMLSelectElement).value).toBe('chat_funnel');
    expect((screen.getByLabelText('Break down by') as HTMLSelectElement).value).toBe('keyword');
    expect((screen.getByLabelText('Compare with the previous period') as HTMLInputElement).checked).toBe(true);
    expect((screen.getByLabelText('Search keywords') as HTMLInputElement).value).toBe('pri');
    const breakdown = screen.getByRole('table', { name: /sort/ });
    expect(within(breakdown).getByRole('columnheader', { name: /Trial started/ }).getAttribute('aria-sort')).toBe(
      'descending',
    );
    // The page says which range it shows, and what it is compared with.
    expect(screen.getByText(/^Showing/).textContent).toBe(
      'Showing 1–30 Nov 2026 (30 days), compared with 2–31 Oct 2026 (30 days).',
    );

    // The server was asked for this range, funnel, campaign and keyword, and for the one before.
    const queries = asked(fetchMock);
    const view = queries.find((query) => query.get('by') === 'keyword' && query.get('from') === '2026-11-01');
    expect(view && Object.fromEntries(view)).toEqual({
      from: '2026-11-01',
      to: '2026-11-30',
      by: 'keyword',
      funnel: 'chat_funnel',
      campaign: 'c1',
      keyword: 'printer',
    });
    expect(queries.some((query) => query.get('from') === '2026-10-02' && query.get('to') === '2026-10-31')).toBe(true);
    // The breakdown's CSV is of the same keyword.
    const csv = screen.getAllByRole('link', { name: 'Download CSV' }).map((link) => link.getAttribute('href') ?? '');
    expect(csv.at(-1)).toContain('keyword=printer');
    expect(csv.at(-1)).toContain('format=csv');
  });

  it('applies a menu at once, keeps it in the address, and goes back with Back', async () => {
    const fetchMock = mockApi({ ...TOOLS, 'GET /api/admin/dashboard': (_init, url) => ({ body: report(url) }) });
    const router = renderPage('/admin?from=2026-11-01&to=2026-11-30&by=campaign');
    await screen.findByRole('table', { name: /Choose a campaign/ });

    fireEvent.change(screen.getByLabelText('Funnel'), { target: { value: 'help_funnel' } });
    await waitFor(() => expect(new URLSearchParams(router.state.location.search).get('funnel')).toBe('help_funnel'));
    const address = new URLSearchParams(router.state.location.search);
    expect(address.get('from')).toBe('2026-11-01');
    expect(address.get('to')).toBe('2026-11-30');
    await waitFor(() =>
      expect(asked(fetchMock).some((query) => query.get('funnel') === 'help_funnel' && query.get('by') === 'campaign')).toBe(
        true,
      ),
    );

    await act(() => router.navigate(-1));
    expect(new URLSearchParams(router.state.location.search).get('funnel')).toBeNull();
    expect((screen.getByLabelText('Funnel') as HTMLSelectElement).value).toBe('');
  });

  it('applies a date once it is whole, and says when the range is the wrong way round', async () => {
    const fetchMock = mockApi({ ...TOOLS, 'GET /api/admin/dashboard': (_init, url) => ({ body: report(url) }) });
    const router = renderPage('/admin?from=2026-11-01&to=2026-11-30');
    await screen.findByRole('table', { name: /how far they got/ });
    const from = screen.getByLabelText('From');

    // A year typed digit by digit passes through "0002-…": nothing is asked for it, even after a pause.
    fireEvent.change(from, { target: { value: '0002-11-10' } });
    await act(() => new Promise((resolve) => setTimeout(resolve, DATE_SETTLE_MS + 100)));
    expect(new URLSearchParams(router.state.location.search).get('from')).toBe('2026-11-01');
    fireEvent.change(from, { target: { value: '2026-11-10' } });
    await waitFor(() => expect(new URLSearchParams(router.state.location.search).get('from')).toBe('2026-11-10'));
    expect(asked(fetchMock).some((query) => query.get('from')?.startsWith('0'))).toBe(false);
    await waitFor(() => expect(screen.getByText(/^Showing/).textContent).toBe('Showing 10–30 Nov 2026 (21 days).'));

    fireEvent.change(screen.getByLabelText('To'), { target: { value: '2026-11-05' } });
    fireEvent.blur(screen.getByLabelText('To'));
    expect((await screen.findByRole('alert')).textContent).toBe(RANGE_ORDER);
    expect(new URLSearchParams(router.state.location.search).get('to')).toBe('2026-11-30');
  });

  it('reads and writes every part of the view', () => {
    const now = new Date('2026-11-20T12:00:00Z');
    const state = readState(new URLSearchParams(VIEW.split('?')[1]), now);
    expect(state).toEqual({
      from: '2026-11-01',
      to: '2026-11-30',
      by: 'keyword',
      funnel: 'chat_funnel',
      campaign: 'c1',
      keyword: 'printer',
      compare: true,
      search: 'pri',
      page: 1,
      sort: { key: 'trial', descending: true },
    });
    expect(readState(writeState({ ...state, page: 3 }), now)).toEqual({ ...state, page: 3 });
    // Without a query, or with a wrong one: the last 30 days by campaign.
    const fallback = { from: '2026-10-22', to: '2026-11-20', by: 'campaign', compare: false, search: '', page: 1 };
    expect(readState(new URLSearchParams(), now)).toMatchObject(fallback);
    expect(readState(new URLSearchParams('from=2026-02-30&to=x&by=nope&page=-2'), now)).toMatchObject(fallback);
    // A keyword is one of a campaign's.
    expect(readState(new URLSearchParams('keyword=printer'), now).keyword).toBeUndefined();
  });
});

describe('the presets', () => {
  it('give UTC days: the last 7, 30 and 90 days to today, this month and last month', () => {
    const ranges = (now: Date) => Object.fromEntries(PRESETS.map((preset) => [preset.label, preset.range(now)]));
    // Late on 20 Nov in UTC (already the 21st east of it).
    expect(ranges(new Date('2026-11-20T23:30:00Z'))).toEqual({
      'Last 7 days': { from: '2026-11-14', to: '2026-11-20' },
      'Last 30 days': { from: '2026-10-22', to: '2026-11-20' },
      'Last 90 days': { from: '2026-08-23', to: '2026-11-20' },
      'This month': { from: '2026-11-01', to: '2026-11-20' },
      'Last month': { from: '2026-10-01', to: '2026-10-31' },
    });
    // Across a year, and a leap February.
    expect(ranges(new Date('2026-01-01T00:00:00Z'))['Last month']).toEqual({ from: '2025-12-01', to: '2025-12-31' });
    expect(ranges(new Date('2028-03-15T08:00:00Z'))['Last month']).toEqual({ from: '2028-02-01', to: '2028-02-29' });
    expect(ranges(new Date('2026-01-01T00:00:00Z'))['This month']).toEqual({ from: '2026-01-01', to: '2026-01-01' });
  });

  it('shows a preset at a click, pressed while it is the range shown', async () => {
    mockApi({ ...TOOLS, 'GET /api/admin/dashboard': (_init, url) => ({ body: report(url) }) });
    const router = renderPage();
    await screen.findByRole('table', { name: /how far they got/ });
    // With no range asked for, the last 30 days.
    expect(screen.getByRole('button', { name: 'Last 30 days' }).getAttribute('aria-pressed')).toBe('true');

    fireEvent.click(screen.getByRole('button', { name: 'Last 7 days' }));
    await waitFor(() => expect(new URLSearchParams(router.state.location.search).get('from')).toBe(dayKey(6)));
    expect(new URLSearchParams(router.state.location.search).get('to')).toBe(dayKey(0));
    await waitFor(() => expect(screen.getByRole('button', { name: 'Last 7 days' }).getAttribute('aria-pressed')).toBe('true'));
    expect(screen.getByRole('button', { name: 'Last 30 days' }).getAttribute('aria-pressed')).toBe('false');
    expect((screen.getByLabelText('From') as HTMLInputElement).value).toBe(dayKey(6));
    expect(screen.getByText(/^Showing/).textContent).toContain('(7 days)');
  });
});

describe('the figures', () => {
  it('totals follow the funnel chosen, and say what they are for', async () => {
    mockApi({ ...TOOLS, 'GET /api/admin/dashboard': (_init, url) => ({ body: report(url) }) });
    const router = renderPage('/admin?from=2026-11-01&to=2026-11-30&campaign=c1');
    await screen.findByRole('table', { name: /how far they got/ });
    expect(tile('Totals', 'Visitors')?.textContent).toBe('100');
    expect(tile('Revenue', 'Net revenue')?.textContent).toBe('$127.00');
    expect(screen.getByText('For all funnels, campaign c1.')).toBeTruthy();

    fireEvent.change(screen.getByLabelText('Funnel'), { target: { value: 'chat_funnel' } });
    await waitFor(() => expect(tile('Totals', 'Visitors')?.textContent).toBe('40'));
    expect(tile('Revenue', 'Net revenue')?.textContent).toBe('$87.00');
    expect(screen.getByText('For Chat funnel (/chat-help), campaign c1.')).toBeTruthy();
    // The campaign stays chosen, and can be let go.
    fireEvent.click(screen.getByRole('button', { name: 'Show all campaigns' }));
    await waitFor(() => expect(new URLSearchParams(router.state.location.search).get('campaign')).toBeNull());
    expect(await screen.findByText('For Chat funnel (/chat-help), all campaigns.')).toBeTruthy();
  });

  it('compares each figure with the previous period of the same length', async () => {
    const earlier: Figures = { ...CHAT, visitors: 32, trial: 8, net_cents: 10_000 };
    mockApi({
      ...TOOLS,
      'GET /api/admin/dashboard': (_init, url) => {
        const now = report(url);
        if (url.searchParams.get('from') !== '2026-10-02') return { body: now };
        return {
          body: {
            ...now,
            funnels: [{ ...earlier, funnel: 'chat_funnel' }],
            total: earlier,
            rows: now.by === 'campaign' ? [row('c1', { visitors: 20, trial: 7, net_cents: 8000 })] : now.rows,
          },
        };
      },
    });
    const router = renderPage('/admin?from=2026-11-01&to=2026-11-30&funnel=chat_funnel');
    await screen.findByRole('table', { name: /how far they got/ });
    expect(screen.queryByText(/previous period/, { selector: '.admin-sr-only' })).toBeNull();

    fireEvent.click(screen.getByLabelText('Compare with the previous period'));
    await waitFor(() => expect(new URLSearchParams(router.state.location.search).get('compare')).toBe('1'));
    // 40 visitors against 32: up 25%; the same trials; net revenue down 13%. In words too.
    const visitors = await waitFor(() => {
      const change = tile('Totals', 'Visitors')?.nextElementSibling;
      expect(change).toBeTruthy();
      return change as Element;
    });
    expect(within(visitors as HTMLElement).getByText('▲ +25.0% (was 32)')).toBeTruthy();
    expect(visitors.textContent).toContain('up 25.0% from the previous period (was 32)');
    expect(tile('Totals', 'Trial started')?.nextElementSibling?.textContent).toContain('No change');
    // A rate changes by points: 8 trials of 40 visitors against 8 of 32.
    expect(tile('Totals', 'Visitor to trial')?.nextElementSibling?.textContent).toContain('▼ −5.0 points (was 25.0%)');
    expect(tile('Revenue', 'Net revenue')?.nextElementSibling?.textContent).toContain('▼ −13.0% (was $100.00)');

    // The funnels' table: each funnel against its own figures then; one that had none is new.
    const funnels = screen.getByRole('table', { name: /how far they got/ });
    const chat = within(funnels).getByRole('row', { name: /Chat funnel/ });
    expect(within(chat).getByText('up 25.0% from the previous period (was 32)')).toBeTruthy();
    // The same trials: short in a cell, said in full to a screen reader.
    const trials = within(chat).getAllByRole('cell')[4];
    expect(trials.textContent).toBe('880.0%= ±0no change from the previous period (was 8)');
    const help = within(funnels).getByRole('row', { name: /Help form/ });
    expect(within(help).getByText('up 60 from the previous period (was 0)')).toBeTruthy();
    // And the breakdown's rows: c1 had 20 visitors, the campaign-less none.
    const c1 = within(screen.getByRole('table', { name: /Choose a campaign/ })).getByRole('row', { name: /^c1/ });
    expect(within(c1).getByText('up 50.0% from the previous period (was 20)')).toBeTruthy();
  });

  it('searches the keywords, pages them, and leads from a keyword to its campaign', async () => {
    const keywords = Array.from({ length: 120 }, (_, index) =>
      row(`kw-${String(index).padStart(3, '0')}`, { visitors: 200 - index }, { campaign: index % 2 === 0 ? 'c1' : 'c2' }),
    );
    const fetchMock = mockApi({
      ...TOOLS,
      'GET /api/admin/dashboard': (_init, url) => {
        const body = report(url);
        if (body.by !== 'keyword') return { body };
        const campaign = url.searchParams.get('campaign');
        return { body: { ...body, rows: keywords.filter((each) => !campaign || each.campaign === campaign) } };
      },
    });
    const router = renderPage('/admin?from=2026-11-01&to=2026-11-30&by=keyword');
    const table = await screen.findByRole('table', { name: /sort/ });
    const keys = () =>
      within(table)
        .getAllByRole('row')
        .slice(1)
        .map((tableRow) => within(tableRow).getByRole('rowheader').textContent);

    // A page at a time, the campaign beside each keyword.
    expect(keys()).toHaveLength(50);
    expect(keys()[0]).toBe('kw-000');
    expect(screen.getByText('Rows 1–50 of 120')).toBeTruthy();
    expect(cellTexts(within(table).getByRole('row', { name: /^kw-001/ }))[0]).toBe('c2');
    expect((screen.getByRole('button', { name: 'Previous' }) as HTMLButtonElement).disabled).toBe(true);
    fireEvent.click(screen.getByRole('button', { name: 'Next' }));
    await waitFor(() => expect(screen.getByText('Rows 51–100 of 120')).toBeTruthy());
    expect(keys()[0]).toBe('kw-050');
    expect(new URLSearchParams(router.state.location.search).get('page')).toBe('2');
    fireEvent.click(screen.getByRole('button', { name: 'Next' }));
    await waitFor(() => expect(screen.getByText('Rows 101–120 of 120')).toBeTruthy());
    expect((screen.getByRole('button', { name: 'Next' }) as HTMLButtonElement).disabled).toBe(true);

    // A search keeps the keywords that hold it, from its first page.
    fireEvent.change(screen.getByLabelText('Search keywords'), { target: { value: 'KW-01' } });
    await waitFor(() => expect(keys()).toHaveLength(10));
    expect(keys()[0]).toBe('kw-010');
    expect(screen.getByText('10 of 120 keywords match.')).toBeTruthy();
    expect(screen.queryByText(/^Rows/)).toBeNull();
    expect(new URLSearchParams(router.state.location.search).get('q')).toBe('KW-01');
    expect(new URLSearchParams(router.state.location.search).get('page')).toBeNull();
    fireEvent.change(screen.getByLabelText('Search keywords'), { target: { value: 'nothing' } });
    expect(await screen.findByText('No keyword matches “nothing”.')).toBeTruthy();
    fireEvent.change(screen.getByLabelText('Search keywords'), { target: { value: '' } });

    // A keyword's campaign leads to that campaign's keywords.
    const kw001 = await within(table).findByRole('row', { name: /^kw-001/ });
    fireEvent.click(within(kw001).getByRole('button', { name: 'Campaign c2: its keywords' }));
    expect(await screen.findByRole('heading', { name: 'Keywords of campaign c2' })).toBeTruthy();
    expect(new URLSearchParams(router.state.location.search).get('campaign')).toBe('c2');
    await waitFor(() => expect(screen.getByText('Rows 1–50 of 60')).toBeTruthy());
    expect(asked(fetchMock).some((query) => query.get('by') === 'keyword' && query.get('campaign') === 'c2')).toBe(true);
    // Within a campaign no campaign column: every row is that campaign's.
    expect(within(screen.getByRole('table', { name: /sort/ })).queryByRole('columnheader', { name: 'Campaign' })).toBeNull();

    // And a keyword to its own figures alone.
    fireEvent.click(screen.getByRole('button', { name: 'kw-001' }));
    expect(await screen.findByRole('heading', { name: 'Keyword kw-001 of campaign c2' })).toBeTruthy();
    await waitFor(() =>
      expect(asked(fetchMock).some((query) => query.get('keyword') === 'kw-001' && query.get('campaign') === 'c2')).toBe(
        true,
      ),
    );
    fireEvent.click(screen.getByRole('button', { name: 'Back to all keywords' }));
    expect(await screen.findByRole('heading', { name: 'Keywords of campaign c2' })).toBeTruthy();
  });

  it('marks the figures that cannot be final yet, and says why', async () => {
    const pending = { paid_from: '2026-11-24', retained_from: '2026-10-31' };
    mockApi({
      ...TOOLS,
      'GET /api/admin/dashboard': (_init, url) => {
        const body = report(url, { pending });
        if (body.by === 'day') {
          body.rows = ['2026-11-20', '2026-11-23', '2026-11-24', '2026-11-30'].map((key) => row(key, { visitors: 5, paid: 1 }));
        }
        if (body.by === 'week') body.rows = ['2026-11-16', '2026-11-23'].map((key) => row(key, { visitors: 5, paid: 1 }));
        return { body };
      },
    });
    const router = renderPage('/admin?from=2026-11-01&to=2026-11-30&by=day');
    const funnels = await screen.findByRole('table', { name: /how far they got/ });

    // The columns, the tiles and the chart.
    for (const table of [funnels, screen.getByRole('table', { name: /sort/ })]) {
      expect(within(table).getByRole('button', { name: 'First month paid, not final' })).toBeTruthy();
      expect(within(table).getByRole('button', { name: 'Subscribed after 30 days, not final' })).toBeTruthy();
      expect(within(table).getByRole('button', { name: 'Trial started' })).toBeTruthy();
    }
    expect(tile('Totals', 'First month paid')?.textContent).toBe('4*, not final');
    expect(tile('Totals', 'Trial started')?.textContent).toBe('10');
    expect(
      screen.getAllByText('First month paid: not final. Trials of visitors from 24 Nov 2026 on are not due yet.', {
        exact: false,
      }).length,
    ).toBeGreaterThan(0);
    expect(
      screen.getAllByText('Subscribed after 30 days: not final. Visitors from 31 Oct 2026 on have not had their 30 days yet.', {
        exact: false,
      }).length,
    ).toBeGreaterThan(0);
    expect(
      await screen.findByText('Shaded on the Paid chart: not final yet. Trials of visitors from 24 Nov 2026 on are not due yet.'),
    ).toBeTruthy();

    // The days from 24 Nov on: their first payments marked, the days before not.
    const days = screen.getByRole('table', { name: /sort/ });
    const paidOf = (day: string) => cellTexts(within(days).getByRole('row', { name: new RegExp(`^${day}`) }))[5];
    expect(paidOf('2026-11-23')).toBe('1');
    expect(paidOf('2026-11-24')).toBe('1*, not final');
    expect(paidOf('2026-11-30')).toBe('1*, not final');
    // A week is not final when its last day is not.
    fireEvent.change(screen.getByLabelText('Break down by'), { target: { value: 'week' } });
    await waitFor(() => expect(new URLSearchParams(router.state.location.search).get('by')).toBe('week'));
    const weeks = await screen.findByRole('table', { name: /sort/ });
    await waitFor(() => expect(within(weeks).getByRole('row', { name: /^Week of 2026-11-16/ })).toBeTruthy());
    expect(cellTexts(within(weeks).getByRole('row', { name: /^Week of 2026-11-16/ }))[5]).toBe('1');
    expect(cellTexts(within(weeks).getByRole('row', { name: /^Week of 2026-11-23/ }))[5]).toBe('1*, not final');
  });

  it('shows no mark when every figure is final, nor from a server that does not say', async () => {
    mockApi({ ...TOOLS, 'GET /api/admin/dashboard': (_init, url) => ({ body: { ...report(url), pending: undefined } }) });
    renderPage('/admin?from=2026-11-01&to=2026-11-30');
    const funnels = await screen.findByRole('table', { name: /how far they got/ });
    expect(within(funnels).getByRole('button', { name: 'First month paid' })).toBeTruthy();
    expect(screen.queryByText(/not final/)).toBeNull();
  });

  it('shows what the ads cost, and says so once where no cost is loaded', async () => {
    const cost = (cents: number, visitors: number, trials: number, net: number): Cost => ({
      cost_cents: cents,
      clicks: visitors,
      cost_per_visitor_cents: visitors > 0 ? Math.round(cents / visitors) : null,
      cost_per_trial_cents: trials > 0 ? Math.round(cents / trials) : null,
      roas: cents > 0 ? net / cents : null,
      profit_cents: net - cents,
    });
    mockApi({
      ...TOOLS,
      'GET /api/admin/dashboard': (_init, url) => {
        const body = report(url);
        body.total = { ...body.total, cost: cost(20_000, 100, 10, 47_000) };
        body.rows =
          body.by === 'campaign'
            ? [
                row('', { visitors: 10, trial: 1 }, { cost: null }),
                row('c1', { visitors: 40, trial: 7, net_cents: 28_200 }, { cost: cost(12_000, 40, 7, 28_200) }),
                row('c9', {}, { cost: cost(8_000, 0, 0, 0) }),
              ]
            : body.rows;
        return { body };
      },
    });
    renderPage('/admin?from=2026-11-01&to=2026-11-30');
    const table = await screen.findByRole('table', { name: /Choose a campaign/ });
    const headers = within(table)
      .getAllByRole('columnheader')
      .map((header) => header.textContent?.trim());
    expect(headers.slice(-5)).toEqual(['Cost', 'Cost per visitor', 'Cost per trial (CAC)', 'ROAS', 'Profit']);

    // Cost $120.00 for 40 visitors and 7 trials, net $282.00: ROAS 2.35×, profit $162.00.
    expect(cellTexts(within(table).getByRole('row', { name: /^c1/ })).slice(-5)).toEqual([
      '$120.00',
      '$3.00',
      '$17.14',
      '2.35×',
      '$162.00',
    ]);
    // A campaign with a cost and no visitors: a row of its own, dashes where nothing divides.
    expect(cellTexts(within(table).getByRole('row', { name: /^c9/ })).slice(-5)).toEqual([
      '$80.00',
      '–',
      '–',
      '0.00×',
      '-$80.00',
    ]);
    // No cost loaded: said once, across the five columns.
    const none = within(table).getByRole('row', { name: /\(none\)/ });
    const said = within(none).getByText(NO_COST).closest('td');
    expect(said?.colSpan).toBe(5);
    expect(cellTexts(none).at(-1)).toBe(NO_COST);
    expect(within(none).getAllByText(NO_COST)).toHaveLength(1);

    // The tiles: the cost, ROAS and profit of the whole.
    expect(tile('Revenue', 'Ad cost')?.textContent).toBe('$200.00');
    expect(tile('Revenue', 'Cost per trial (CAC)')?.textContent).toBe('$20.00');
    expect(tile('Revenue', 'Return on ad spend')?.textContent).toBe('2.35×');
    expect(tile('Revenue', 'Profit')?.textContent).toBe('$270.00');

    // Sorted by cost, the row without one comes last either way.
    fireEvent.click(within(table).getByRole('button', { name: 'Cost' }));
    const order = () =>
      within(table)
        .getAllByRole('row')
        .slice(1)
        .map((tableRow) => within(tableRow).getByRole('rowheader').textContent);
    await waitFor(() => expect(order()).toEqual(['c1', 'c9', '(none)']));
    fireEvent.click(within(table).getByRole('button', { name: 'Cost' }));
    await waitFor(() => expect(order()).toEqual(['c9', 'c1', '(none)']));
  });

  it('shows no cost columns from a server that does not know costs, and says none are loaded', async () => {
    mockApi({ ...TOOLS, 'GET /api/admin/dashboard': (_init, url) => ({ body: report(url) }) });
    renderPage('/admin?from=2026-11-01&to=2026-11-30');
    const table = await screen.findByRole('table', { name: /Choose a campaign/ });
    expect(within(table).queryByRole('button', { name: 'Cost' })).toBeNull();
    expect(screen.queryByText('Ad cost')).toBeNull();
    expect(screen.queryByText(/No ad costs are loaded/)).toBeNull();
  });

  it('says so when the server knows costs but none are loaded for these days', async () => {
    mockApi({
      ...TOOLS,
      'GET /api/admin/dashboard': (_init, url) => {
        const body = report(url);
        return { body: { ...body, total: { ...body.total, cost: null }, rows: body.rows.map((each) => ({ ...each, cost: null })) } };
      },
    });
    renderPage('/admin?from=2026-11-01&to=2026-11-30');
    const table = await screen.findByRole('table', { name: /Choose a campaign/ });
    expect(within(table).queryByRole('button', { name: 'Cost' })).toBeNull();
    expect(screen.getByText(/No ad costs are loaded for these days/)).toBeTruthy();
  });

  it('names each table’s scrolling frame, so a keyboard can scroll it', async () => {
    mockApi({ ...TOOLS, 'GET /api/admin/dashboard': (_init, url) => ({ body: report(url) }) });
    renderPage('/admin?from=2026-11-01&to=2026-11-30');
    await screen.findByRole('table', { name: /how far they got/ });
    for (const name of ['Funnels table', 'Campaign table']) {
      const frame = screen.getByRole('region', { name });
      expect(frame.tabIndex).toBe(0);
      expect(within(frame).getByRole('table')).toBeTruthy();
    }
  });
});

describe('the live rate, the chart and the words', () => {
  it('counts messages a minute over the samples it has', () => {
    const at = (seconds: number, messages: number) => ({ at: seconds * 1000, live: { ...LIVE, messagesStored: messages } });
    expect(perMinute([at(0, 100)], (live) => live.messagesStored)).toBeNull();
    expect(perMinute([at(0, 100), at(30, 160)], (live) => live.messagesStored)).toBe(120);
  });

  it('gives every day of the range a point, zero where nobody came', () => {
    const [days, visitors] = alignedDays('2026-11-19', '2026-11-21', [row('2026-11-20', { visitors: 5 })]);
    expect(days).toHaveLength(3);
    expect(visitors).toEqual([0, 5, 0]);
  });

  it('ticks days for a month, Mondays for a quarter and months for a year', () => {
    const labels = (from: string, to: string, width: number) => {
      const { ticks, unit } = dayTicks(from, to, width);
      return ticks.map((tick) => tickLabel(tick, unit));
    };
    // A week on a wide chart: every day.
    expect(labels('2026-11-01', '2026-11-07', 900)).toEqual(['1 Nov', '2 Nov', '3 Nov', '4 Nov', '5 Nov', '6 Nov', '7 Nov']);
    // A month: every day where it fits, every other or third day where it does not, weeks on a phone.
    expect(labels('2026-11-01', '2026-11-30', 2000)).toHaveLength(30);
    expect(labels('2026-11-01', '2026-11-30', 1000).slice(0, 3)).toEqual(['1 Nov', '3 Nov', '5 Nov']);
    expect(labels('2026-11-01', '2026-11-30', 250)).toEqual(['2 Nov', '9 Nov', '16 Nov', '23 Nov', '30 Nov']);
    // 90 days: Mondays (2 Nov 2026 is one), every week or two.
    const quarter = dayTicks('2026-09-01', '2026-11-29', 1000);
    expect(quarter.unit).toBe('week');
    expect(quarter.ticks.every((tick) => new Date(tick * 1000).getUTCDay() === 1)).toBe(true);
    // A year: the 1st of the months.
    expect(labels('2025-12-01', '2026-11-30', 1000)).toEqual([
      'Dec 2025', 'Jan 2026', 'Feb 2026', 'Mar 2026', 'Apr 2026', 'May 2026',
      'Jun 2026', 'Jul 2026', 'Aug 2026', 'Sep 2026', 'Oct 2026', 'Nov 2026',
    ]);
    expect(labels('2025-12-15', '2026-11-30', 300)).toEqual(['Jan 2026', 'Apr 2026', 'Jul 2026', 'Oct 2026']);
  });

  it('says a range, the one before it, and a change', () => {
    expect(formatRange('2026-11-01', '2026-11-30')).toBe('1–30 Nov 2026 (30 days)');
    expect(formatRange('2026-10-28', '2026-11-03')).toBe('28 Oct – 3 Nov 2026 (7 days)');
    expect(formatRange('2025-12-28', '2026-01-03')).toBe('28 Dec 2025 – 3 Jan 2026 (7 days)');
    expect(formatRange('2026-11-20', '2026-11-20')).toBe('20 Nov 2026 (1 day)');
    expect(previousPeriod('2026-11-01', '2026-11-30')).toEqual({ from: '2026-10-02', to: '2026-10-31' });
    expect(previousPeriod('2026-03-01', '2026-03-07')).toEqual({ from: '2026-02-22', to: '2026-02-28' });
    const count = (value: number) => String(value);
    expect(change(40, 32, count)).toMatchObject({ text: '+25.0%', direction: 'up' });
    expect(change(3, 4, count)).toMatchObject({ text: '−25.0%', direction: 'down' });
    expect(change(5, 5, count)).toMatchObject({ text: 'No change', direction: 'same' });
    // From nothing, or from a loss: the difference itself.
    expect(change(6, 0, count)).toMatchObject({ text: '+6', direction: 'up' });
    expect(change(-2, -5, count)).toMatchObject({ text: '+3', direction: 'up' });
    expect(change(0.2, 0.25, count, (value) => `${(value * 100).toFixed(1)} points`)).toMatchObject({
      text: '−5.0 points',
      direction: 'down',
      words: 'down 5.0 points from the previous period (was 0.25)',
    });
  });
});
