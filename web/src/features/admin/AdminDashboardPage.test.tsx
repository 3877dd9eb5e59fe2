import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { PublicConfigProvider } from '../../lib/public-config';
import { SessionProvider } from '../../lib/session';
import { mockApi } from '../../test/fetch-mock';
import { AdminDashboardPage, NOT_AVAILABLE } from './AdminDashboardPage';
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
    mockApi({
      'GET /api/admin/dashboard': (_init, url) => ({ body: report(url) }),
      'GET /api/admin/live': { body: LIVE },
    });
    renderPage();
    const campaigns = await screen.findByRole('table', { name: /Choose a campaign/ });
    const keys = () =>
      within(campaigns)
        .getAllByRole('row')
        .slice(1)
        .map((tableRow) => within(tableRow).getAllByRole('rowheader')[0].textContent);
    expect(keys()).toEqual(['c1', '(none)']);
    const header = within(campaigns).getByRole('button', { name: /Visitors$/ });
    fireEvent.click(header);
    expect(keys()).toEqual(['(none)', 'c1']);
    fireEvent.click(within(campaigns).getByRole('button', { name: /^Campaign/ }));
    expect(keys()).toEqual(['(none)', 'c1']);
  });

  it('is not available to anyone the server does not answer', async () => {
    mockApi({});
    renderPage();
    expect(await screen.findByText(NOT_AVAILABLE)).toBeTruthy();
    expect(screen.queryByRole('table')).toBeNull();
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
