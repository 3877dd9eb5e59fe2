import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { PublicConfigProvider } from '../../lib/public-config';
import { SessionProvider } from '../../lib/session';
import { mockApi } from '../../test/fetch-mock';
import { AdminDashboardPage, LOAD_FAILED, NOT_AVAILABLE } from './AdminDashboardPage';
import { perMinute } from './LivePanel';
import { alignedDays } from './DailyChart';
import type { Figures, Live, Report, Row } from './api';

const ZERO: Figures = {
  visitors: 0,
  first_message: 0,
  final_message: 0,
  checkout: 0,
  trial: 0,
  paid: 0,
  retained: 0,
  fee_cents: 0,
  fee_refund_cents: 0,
  subscription_cents: 0,
  net_cents: 0,
  net_cents_per_visitor: 0,
};

const CHAT: Figures = {
  ...ZERO,
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

function row(key: string, figures: Partial<Figures>): Row {
  return { ...ZERO, ...figures, key };
}

function report(url: URL): Report {
  const by = (url.searchParams.get('by') ?? 'campaign') as Report['by'];
  const campaign = url.searchParams.get('campaign');
  const rows: Record<string, Row[]> = {
    campaign: [row('c1', { visitors: 30, trial: 7, net_cents: 8000 }), row('', { visitors: 10, trial: 1 })],
    keyword: [row('printer', { visitors: 20, trial: 5 }), row('wifi', { visitors: 10, trial: 2 })],
    day: [row('2026-11-20', { visitors: 40, trial: 8 })],
  };
  return {
    from: url.searchParams.get('from') ?? '',
    to: url.searchParams.get('to') ?? '',
    by,
    funnel: url.searchParams.get('funnel'),
    campaign,
    funnels: [{ ...CHAT, funnel: 'chat_funnel' }],
    total: CHAT,
    rows: rows[by] ?? [],
  };
}

const LIVE: Live = {
  funnelConversations: 12,
  memberChats: 3,
  realtimeConnections: 15,
  messagesStored: 500,
  aiCalls: 40,
  aiFailures: 1,
};

function renderPage() {
  const router = createMemoryRouter(
    [
      { path: '/admin', element: <AdminDashboardPage /> },
      { path: '/', element: <h1>Home</h1> },
    ],
    { initialEntries: ['/admin'] },
  );
  render(
    <PublicConfigProvider>
      <SessionProvider>
        <RouterProvider router={router} />
      </SessionProvider>
    </PublicConfigProvider>,
  );
}

describe('AdminDashboardPage', () => {
  it('shows each funnel step with its rate, the revenue, and the campaigns, and drills into a campaign', async () => {
    const fetchMock = mockApi({
      'GET /api/admin/dashboard': (_init, url) => ({ body: report(url) }),
      'GET /api/admin/live': { body: LIVE },
    });
    renderPage();

    const funnels = await screen.findByRole('table', { name: /how far they got/ });
    const chat = within(funnels).getByRole('row', { name: /Chat funnel/ });
    expect(within(chat).getByText('40')).toBeTruthy();
    // 30 of 40 visitors sent a first message.
    expect(within(chat).getByText('75.0%')).toBeTruthy();
    expect(within(chat).getByText('$87.00')).toBeTruthy();
    const revenue = within(screen.getByRole('region', { name: 'Revenue' }));
    expect(revenue.getByText('Setup fees taken').nextElementSibling?.textContent).toBe('$8.00');
    expect(revenue.getByText('Net per visitor').nextElementSibling?.textContent).toBe('$2.17');
    expect(await screen.findByText('Conversations open')).toBeTruthy();

    const campaigns = screen.getByRole('table', { name: /Choose a campaign/ });
    expect(within(campaigns).getByRole('row', { name: /\(none\)/ })).toBeTruthy();
    const csv = screen.getAllByRole('link', { name: 'Download CSV' }).map((link) => link.getAttribute('href'));
    expect(csv.some((href) => href?.includes('format=csv') && href.includes('by=campaign'))).toBe(true);

    fireEvent.click(within(campaigns).getByRole('button', { name: 'c1' }));
    const keywords = await screen.findByRole('heading', { name: 'Keywords of campaign c1' });
    expect(keywords).toBeTruthy();
    expect(await screen.findByRole('row', { name: /printer/ })).toBeTruthy();
    const asked = fetchMock.mock.calls.map(([input]) => String(input));
    expect(asked.some((url) => url.includes('by=keyword') && url.includes('campaign=c1'))).toBe(true);

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
      'GET /api/admin/dashboard': (_init, url) => {
        const body = report(url);
        return { body: body.by === 'campaign' ? { ...body, rows: campaigns } : body };
      },
      'GET /api/admin/live': { body: LIVE },
    });
    renderPage();
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
    expect(keys()).toEqual(['charlie', '(none)', 'alpha', 'delta', 'bravo']);
    expect(sorted()).toEqual([['Visitors', 'ascending', '▲']]);
    click('Visitors');
    expect(keys()).toEqual(['bravo', 'delta', 'alpha', '(none)', 'charlie']);
    expect(sorted()).toEqual([['Visitors', 'descending', '▼']]);

    // Another numeric column sorts largest first on its first click, and back.
    click('Net revenue');
    expect(keys()).toEqual(['alpha', '(none)', 'charlie', 'delta', 'bravo']);
    expect(sorted()).toEqual([['Net revenue', 'descending', '▼']]);
    click('Net revenue');
    expect(keys()).toEqual(['bravo', 'delta', 'charlie', '(none)', 'alpha']);
    expect(sorted()).toEqual([['Net revenue', 'ascending', '▲']]);

    // A text column sorts from A on its first click (the campaign-less row, '', first), and back.
    click('Campaign');
    expect(keys()).toEqual(['(none)', 'alpha', 'bravo', 'charlie', 'delta']);
    expect(sorted()).toEqual([['Campaign', 'ascending', '▲']]);
    click('Campaign');
    expect(keys()).toEqual(['delta', 'charlie', 'bravo', 'alpha', '(none)']);
    expect(sorted()).toEqual([['Campaign', 'descending', '▼']]);
  });

  // The server answers 404 to anyone but a signed-in admin; a lapsed session may get 401.
  it.each([404, 401])('is not available to anyone the server does not answer (%i)', async (status) => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'], shouldAdvanceTime: true });
    try {
      const refusal = { status, body: { error: status === 401 ? 'unauthorized' : 'not_found', message: 'Not found' } };
      const fetchMock = mockApi({
        'GET /api/admin/dashboard': refusal,
        'GET /api/admin/live': refusal,
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
      const asked = liveCalls();
      expect(asked).toBeLessThanOrEqual(1);
      await act(() => vi.advanceTimersByTimeAsync(30_000));
      expect(liveCalls()).toBe(asked);
      expect(screen.getByText(NOT_AVAILABLE)).toBeTruthy();
    } finally {
      vi.useRealTimers();
    }
  });

  // Other failures are not a refusal: the page stays, says so, and can be tried again.
  it.each([403, 500])('says the dashboard could not be loaded when the server fails (%i)', async (status) => {
    mockApi({
      'GET /api/admin/dashboard': { status, body: { error: 'internal', message: 'Something went wrong' } },
      'GET /api/admin/live': { body: LIVE },
    });
    renderPage();
    await waitFor(() => expect(screen.getByRole('alert').textContent).toBe(LOAD_FAILED));
    expect(screen.queryByText(NOT_AVAILABLE)).toBeNull();
    expect(screen.queryByRole('table')).toBeNull();
    expect(screen.getByRole('button', { name: 'Show' })).toBeTruthy();
  });

  it('says what is wrong with a range the server refuses', async () => {
    mockApi({
      'GET /api/admin/dashboard': {
        status: 400,
        body: { error: 'invalid_range', message: 'The start date must not be after the end date.' },
      },
      'GET /api/admin/live': { body: LIVE },
    });
    renderPage();
    await waitFor(() =>
      expect(screen.getByRole('alert').textContent).toBe('The start date must not be after the end date.'),
    );
  });
});

describe('the live rate and the chart days', () => {
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
});
