import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { vi } from 'vitest';
import { PublicConfigProvider } from '../../lib/public-config';
import { SessionProvider } from '../../lib/session';
import { mockApi } from '../../test/fetch-mock';
import { CheckoutDebugPage } from './CheckoutDebugPage';
import type { DebugOverview } from './api';

const ADMIN = { id: 'admin1', email: 'admin@example.com' };
const OVERVIEW: DebugOverview = {
  checkouts: [
    {
      provider: 'demo',
      paymentSessionId: 'cs_demo_1',
      sessionId: 's1',
      source: 'chat_funnel',
      status: 'complete',
      email: 'ann@example.com',
      userId: 'u1',
      refundableFee: true,
      createdAt: '2025-05-04T13:02:11Z',
      completedAt: '2025-05-04T13:04:00Z',
      fulfilledAt: null,
    },
  ],
  users: [
    {
      id: 'u1',
      email: 'ann@example.com',
      createdAt: '2025-05-04T13:04:01Z',
      hasPassword: false,
      trialStarted: true,
      trialEndDate: '2025-05-11T13:04:01Z',
      checkoutSessionId: 's1',
      paymentSessionId: 'cs_demo_1',
      subscriptionId: 'sub_1',
    },
  ],
  webhookEvents: [
    {
      eventId: 'evt_1',
      eventType: 'checkout.session.completed',
      source: 'simulation',
      receivedAt: '2025-05-04T13:05:00Z',
      processedAt: '2025-05-04T13:05:01Z',
      outcome: 'Processed',
    },
  ],
  webhookDebug: [
    {
      email: 'ann@example.com',
      sessionId: 's1',
      paymentSessionId: 'cs_demo_1',
      checkedAt: '2025-05-04T13:06:00Z',
      userAgent: 'Mozilla/5.0 (X11; Linux x86_64)',
      origin: 'https://help.example',
      pathname: '/',
    },
  ],
};
const OVERVIEW_URL = '/api/admin/checkout-debug';

type Reply = { status?: number; body: unknown };
type Handlers = Parameters<typeof mockApi>[0];

/** An admin with debug tools on, and the overview above, unless told otherwise. */
function mockDebugApi(overrides: Handlers = {}) {
  return mockApi({
    'GET /api/auth/me': { body: { user: ADMIN } },
    'GET /api/admin/checkout-debug': { body: OVERVIEW },
    ...overrides,
  });
}

function renderPage() {
  const router = createMemoryRouter(
    [
      { path: '/checkout-debug', element: <CheckoutDebugPage /> },
      { path: '/', element: <h1>Home</h1> },
    ],
    { initialEntries: ['/checkout-debug'] },
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

function overviewCalls(fetchMock: ReturnType<typeof mockApi>) {
  return fetchMock.mock.calls.filter(([url]) => url === OVERVIEW_URL).length;
}

function bodyOf(fetchMock: ReturnType<typeof mockApi>, url: string) {
  const call = fetchMock.mock.calls.find(([input, init]) => input === url && init?.method === 'POST');
  return call ? JSON.parse(String(call[1]?.body)) : undefined;
}

function posted(fetchMock: ReturnType<typeof mockApi>) {
  return fetchMock.mock.calls.filter(([, init]) => init?.method === 'POST');
}

function form(name: string) {
  return screen.getByRole('form', { name });
}

function fill(formName: string, label: string, value: string) {
  fireEvent.change(within(form(formName)).getByLabelText(label), { target: { value } });
}

function submit(formName: string, button: string) {
  fireEvent.click(within(form(formName)).getByRole('button', { name: button }));
}

async function ready() {
  await screen.findByRole('heading', { level: 2, name: /Recent checkouts/ });
}

/** A reply held until the test lets it go, so that the clock can be faked in between. */
function held() {
  let release: (reply: Reply) => void = () => {};
  const handler = () => new Promise<Reply>((resolve) => (release = resolve));
  return { handler, release: (reply: Reply) => release(reply) };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('CheckoutDebugPage: who may see it', () => {
  it.each([
    [404, 'not_found', 'Not found'],
    [401, 'unauthorized', 'Sign in first'],
  ])('is not available when the overview answers %i', async (status, error, message) => {
    mockDebugApi({ 'GET /api/admin/checkout-debug': { status, body: { error, message } } });
    const router = renderPage();
    expect(await screen.findByText('This page is not available.')).toBeTruthy();
    expect(screen.getByRole('heading', { level: 1, name: 'Checkout Debug' })).toBeTruthy();
    expect(screen.queryByRole('table')).toBeNull();
    expect(screen.queryByRole('form')).toBeNull();

    const home = screen.getByRole('link', { name: 'Return to Home' });
    expect(home.getAttribute('href')).toBe('/');
    fireEvent.click(home);
    await waitFor(() => expect(router.state.location.pathname).toBe('/'));
  });

  it('is not available when the public config has debug tools off', async () => {
    mockDebugApi({
      'GET /api/public-config': {
        body: { productName: 'HelpNow', assistantName: 'Emma', supportEmail: '', debugTools: false },
      },
    });
    renderPage();
    expect(await screen.findByText('This page is not available.')).toBeTruthy();
    expect(screen.queryByRole('table')).toBeNull();
    expect(screen.queryByRole('form')).toBeNull();
  });

  it('shows a loading state with its heading until the overview answers', async () => {
    const overview = held();
    mockDebugApi({ 'GET /api/admin/checkout-debug': overview.handler });
    renderPage();
    expect(screen.getByRole('heading', { level: 1, name: 'Checkout Debug' })).toBeTruthy();
    expect(screen.getByRole('status').textContent).toContain('Loading debug data...');
    expect(screen.queryByText('This page is not available.')).toBeNull();
    overview.release({ body: OVERVIEW });
    await ready();
  });
});

describe('CheckoutDebugPage: overview', () => {
  it("shows the spec's webhook_debug trail: each subscription check a member's page made", async () => {
    mockDebugApi();
    renderPage();
    await ready();
    const checks = within(screen.getByRole('region', { name: /Subscription checks/ })).getByRole('table');
    expect(
      within(within(checks).getAllByRole('row')[1])
        .getAllByRole('cell')
        .map((cell) => cell.textContent),
    ).toEqual([
      '2025-05-04 13:06:00 UTC',
      'ann@example.com',
      's1',
      'cs_demo_1',
      'https://help.example',
      '/',
      'Mozilla/5.0 (X11; Linux x86_64)',
    ]);
  });

  it('shows the signed-in admin and the three tables', async () => {
    mockDebugApi();
    renderPage();
    await ready();
    expect((await screen.findByText('admin@example.com')).closest('p')?.textContent).toBe(
      'Signed in as admin@example.com',
    );

    const checkouts = within(screen.getByRole('region', { name: /Recent checkouts/ })).getByRole('table');
    const checkoutRow = within(checkouts).getAllByRole('row')[1];
    const checkoutCells = within(checkoutRow)
      .getAllByRole('cell')
      .map((cell) => cell.textContent);
    expect(checkoutCells).toEqual([
      'Use',
      'cs_demo_1',
      's1',
      'complete',
      'ann@example.com',
      'chat_funnel',
      'demo',
      'Refundable fee',
      'u1',
      '2025-05-04 13:02:11 UTC',
      '2025-05-04 13:04:00 UTC',
      '—',
    ]);
    expect(within(checkoutRow).getByText('2025-05-04 13:02:11 UTC').getAttribute('datetime')).toBe(
      '2025-05-04T13:02:11Z',
    );

    const users = within(screen.getByRole('region', { name: /Users/ })).getByRole('table');
    expect(
      within(within(users).getAllByRole('row')[1])
        .getAllByRole('cell')
        .map((cell) => cell.textContent),
    ).toEqual([
      'ann@example.com',
      'u1',
      '2025-05-04 13:04:01 UTC',
      'No',
      'Yes',
      '2025-05-11 13:04:01 UTC',
      's1',
      'cs_demo_1',
      'sub_1',
    ]);

    const events = within(screen.getByRole('region', { name: /Webhook events \(last hour\)/ })).getByRole('table');
    expect(
      within(within(events).getAllByRole('row')[1])
        .getAllByRole('cell')
        .map((cell) => cell.textContent),
    ).toEqual([
      '2025-05-04 13:05:00 UTC',
      'evt_1',
      'checkout.session.completed',
      'simulation',
      '2025-05-04 13:05:01 UTC',
      'Processed',
    ]);
  });

  it('keeps each table in its own focusable scroll region', async () => {
    mockDebugApi();
    renderPage();
    await ready();
    for (const name of ['Recent checkouts (1)', 'Users (1)', 'Webhook events (last hour) (1)']) {
      const region = screen.getByRole('region', { name });
      expect(region.firstElementChild?.tagName).toBe('TABLE');
      expect(region.className).toBe('debug-table');
      expect(region.tabIndex).toBe(0);
    }
  });

  it('says when the lists are empty', async () => {
    mockDebugApi({ 'GET /api/admin/checkout-debug': { body: { checkouts: [], users: [], webhookEvents: [] } } });
    renderPage();
    expect(await screen.findByText('No checkouts yet.')).toBeTruthy();
    expect(screen.getByText('No users yet.')).toBeTruthy();
    expect(screen.getByText('No webhook events in the last hour.')).toBeTruthy();
  });

  it('loads again on Refresh, keeping the tables meanwhile', async () => {
    const second = held();
    let calls = 0;
    const fetchMock = mockDebugApi({
      'GET /api/admin/checkout-debug': () => (++calls === 1 ? { body: OVERVIEW } : second.handler()),
    });
    renderPage();
    await ready();
    fireEvent.click(screen.getByRole('button', { name: 'Refresh' }));
    const busy = (await screen.findByRole('button', { name: 'Refreshing...' })) as HTMLButtonElement;
    expect(busy.disabled).toBe(true);
    expect(screen.getByText('evt_1')).toBeTruthy();
    expect(overviewCalls(fetchMock)).toBe(2);

    second.release({ body: { ...OVERVIEW, webhookEvents: [{ ...OVERVIEW.webhookEvents[0], eventId: 'evt_2' }] } });
    expect(await screen.findByText('evt_2')).toBeTruthy();
    expect(screen.queryByText('evt_1')).toBeNull();
    expect(screen.getByRole('button', { name: 'Refresh' })).toBeTruthy();
  });

  it('says when the overview could not be loaded, and still offers the actions', async () => {
    mockDebugApi({
      'GET /api/admin/checkout-debug': {
        status: 500,
        body: { error: 'internal', message: 'Something went wrong on our side. Please try again.' },
      },
    });
    renderPage();
    expect((await screen.findByRole('alert')).textContent).toBe(
      'Could not load the debug data: Something went wrong on our side. Please try again.',
    );
    expect(screen.queryByRole('table')).toBeNull();
    expect(form('Simulate webhook')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Refresh' })).toBeTruthy();
  });
});

describe('CheckoutDebugPage: manual login', () => {
  it('needs both email and password', async () => {
    const fetchMock = mockDebugApi();
    renderPage();
    await ready();
    fill('Manual login', 'Email', 'bob@example.com');
    submit('Manual login', 'Log in');
    expect(within(form('Manual login')).getByRole('alert').textContent).toBe('Please enter both email and password');
    expect(posted(fetchMock)).toHaveLength(0);
  });

  it('signs in with the normal sign-in call and updates the signed-in user', async () => {
    const fetchMock = mockDebugApi({ 'POST /api/auth/login': { body: { user: { id: 'u2', email: 'bob@example.com' } } } });
    renderPage();
    await ready();
    await screen.findByText('admin@example.com');
    fill('Manual login', 'Email', ' bob@example.com ');
    fill('Manual login', 'Password', 'secret1');
    submit('Manual login', 'Log in');

    expect((await within(form('Manual login')).findByRole('status')).textContent).toBe('Signed in as bob@example.com.');
    expect(bodyOf(fetchMock, '/api/auth/login')).toEqual({ email: 'bob@example.com', password: 'secret1' });
    expect(screen.getByText('bob@example.com', { selector: 'strong' })).toBeTruthy();
    expect((within(form('Manual login')).getByLabelText('Password') as HTMLInputElement).value).toBe('');
  });

  it("says Login failed with the server's message", async () => {
    mockDebugApi({
      'POST /api/auth/login': {
        status: 401,
        body: { error: 'invalid_credentials', message: 'Invalid email or password.' },
      },
    });
    renderPage();
    await ready();
    fill('Manual login', 'Email', 'bob@example.com');
    fill('Manual login', 'Password', 'nope');
    submit('Manual login', 'Log in');
    expect((await within(form('Manual login')).findByRole('alert')).textContent).toBe(
      'Login failed: Invalid email or password.',
    );
    expect((within(form('Manual login')).getByRole('button', { name: 'Log in' }) as HTMLButtonElement).disabled).toBe(
      false,
    );
  });
});

describe('CheckoutDebugPage: create account', () => {
  it('needs an email, in the spec words', async () => {
    const fetchMock = mockDebugApi();
    renderPage();
    await ready();
    fill('Create account', 'Email', '  ');
    submit('Create account', 'Create account');
    expect(within(form('Create account')).getByRole('alert').textContent).toBe('Email is required to create an account');
    expect(posted(fetchMock)).toHaveLength(0);
  });

  it('creates the account, shows the answer and reloads the overview after 1.5 seconds', async () => {
    const create = held();
    const fetchMock = mockDebugApi({ 'POST /api/admin/checkout-debug/accounts': create.handler });
    renderPage();
    await ready();
    fill('Create account', 'Email', ' new@example.com ');
    submit('Create account', 'Create account');
    expect(
      ((await within(form('Create account')).findByRole('button', { name: 'Creating...' })) as HTMLButtonElement)
        .disabled,
    ).toBe(true);
    expect(bodyOf(fetchMock, '/api/admin/checkout-debug/accounts')).toEqual({ email: 'new@example.com' });
    expect(overviewCalls(fetchMock)).toBe(1);

    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    create.release({
      status: 201,
      body: { created: true, userId: 'u9', message: 'Account created for new@example.com; a link was mailed.' },
    });
    await act(() => vi.advanceTimersByTimeAsync(0));
    const status = within(form('Create account')).getByRole('status');
    expect(status.textContent).toBe('Account created for new@example.com; a link was mailed.User ID: u9');

    await act(() => vi.advanceTimersByTimeAsync(1499));
    expect(overviewCalls(fetchMock)).toBe(1);
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(overviewCalls(fetchMock)).toBe(2);
  });

  it('says Account creation failed when the email already has an account, without reloading', async () => {
    const message = 'Account creation failed: ann@example.com already has an account, so a password reset mail was sent.';
    const fetchMock = mockDebugApi({
      'POST /api/admin/checkout-debug/accounts': { body: { created: false, userId: 'u1', message } },
    });
    renderPage();
    await ready();
    fill('Create account', 'Email', 'ann@example.com');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    submit('Create account', 'Create account');
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(within(form('Create account')).getByRole('alert').textContent).toBe(message);
    await act(() => vi.advanceTimersByTimeAsync(5000));
    expect(overviewCalls(fetchMock)).toBe(1);
  });

  it("says Account creation failed with the server's message", async () => {
    mockDebugApi({
      'POST /api/admin/checkout-debug/accounts': {
        status: 400,
        body: { error: 'invalid_email', message: 'Please enter a valid email address.' },
      },
    });
    renderPage();
    await ready();
    fill('Create account', 'Email', 'nope');
    submit('Create account', 'Create account');
    expect((await within(form('Create account')).findByRole('alert')).textContent).toBe(
      'Account creation failed: Please enter a valid email address.',
    );
  });
});

describe('CheckoutDebugPage: send reset', () => {
  it('needs an email', async () => {
    const fetchMock = mockDebugApi();
    renderPage();
    await ready();
    submit('Send password reset', 'Send reset');
    expect(within(form('Send password reset')).getByRole('alert').textContent).toBe('Please enter your email address');
    expect(posted(fetchMock)).toHaveLength(0);
  });

  it('sends the reset and shows the answer, without reloading', async () => {
    const fetchMock = mockDebugApi({
      'POST /api/admin/checkout-debug/reset': { body: { message: 'A password reset mail was sent to ann@example.com.' } },
    });
    renderPage();
    await ready();
    fill('Send password reset', 'Email', ' ann@example.com');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    submit('Send password reset', 'Send reset');
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(within(form('Send password reset')).getByRole('status').textContent).toBe(
      'A password reset mail was sent to ann@example.com.',
    );
    expect(bodyOf(fetchMock, '/api/admin/checkout-debug/reset')).toEqual({ email: 'ann@example.com' });
    await act(() => vi.advanceTimersByTimeAsync(5000));
    expect(overviewCalls(fetchMock)).toBe(1);
  });

  it('says when there is no such account', async () => {
    mockDebugApi({
      'POST /api/admin/checkout-debug/reset': {
        status: 404,
        body: { error: 'user_not_found', message: 'No account found with this email address.' },
      },
    });
    renderPage();
    await ready();
    fill('Send password reset', 'Email', 'zed@example.com');
    submit('Send password reset', 'Send reset');
    expect((await within(form('Send password reset')).findByRole('alert')).textContent).toBe(
      'Password reset failed: No account found with this email address.',
    );
  });
});

describe('CheckoutDebugPage: simulate webhook', () => {
  it('needs a checkout and an email', async () => {
    const fetchMock = mockDebugApi();
    renderPage();
    await ready();
    fill('Simulate webhook', 'Email', 'ann@example.com');
    submit('Simulate webhook', 'Simulate webhook');
    expect(within(form('Simulate webhook')).getByRole('alert').textContent).toBe(
      'Pick a checkout from the table or enter a paymentSessionId',
    );
    fill('Simulate webhook', 'paymentSessionId', 'cs_demo_1');
    fill('Simulate webhook', 'Email', ' ');
    submit('Simulate webhook', 'Simulate webhook');
    expect(within(form('Simulate webhook')).getByRole('alert').textContent).toBe(
      'Email is required to simulate a webhook',
    );
    expect(posted(fetchMock)).toHaveLength(0);
  });

  it('takes a checkout from the table, shows the event and reloads the overview after 2 seconds', async () => {
    const simulate = held();
    const fetchMock = mockDebugApi({ 'POST /api/webhook-test.js': simulate.handler });
    renderPage();
    await ready();
    fireEvent.click(screen.getByRole('button', { name: 'Use checkout cs_demo_1 for the webhook simulation' }));
    const email = within(form('Simulate webhook')).getByLabelText('Email') as HTMLInputElement;
    expect(email.value).toBe('ann@example.com');
    expect(document.activeElement).toBe(email);
    expect((within(form('Simulate webhook')).getByLabelText('paymentSessionId') as HTMLInputElement).value).toBe(
      'cs_demo_1',
    );
    expect(within(form('Simulate webhook')).getByText('Picked from the table, with session s1.')).toBeTruthy();

    submit('Simulate webhook', 'Simulate webhook');
    await within(form('Simulate webhook')).findByRole('button', { name: 'Simulating...' });
    expect(bodyOf(fetchMock, '/api/webhook-test.js')).toEqual({
      type: 'checkout.session.completed',
      sessionId: 's1',
      paymentSessionId: 'cs_demo_1',
      email: 'ann@example.com',
    });

    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    simulate.release({ body: { eventId: 'evt_sim_7', outcome: 'Processed' } });
    await act(() => vi.advanceTimersByTimeAsync(0));
    const status = within(form('Simulate webhook')).getByRole('status');
    expect(within(status).getByText('evt_sim_7')).toBeTruthy();
    expect(status.textContent).toBe('Webhook simulated.Event IDevt_sim_7OutcomeProcessed');

    await act(() => vi.advanceTimersByTimeAsync(1999));
    expect(overviewCalls(fetchMock)).toBe(1);
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(overviewCalls(fetchMock)).toBe(2);
  });

  it('sends a typed paymentSessionId alone', async () => {
    const fetchMock = mockDebugApi({ 'POST /api/webhook-test.js': { body: { eventId: 'evt_sim_8', outcome: 'Duplicate' } } });
    renderPage();
    await ready();
    // Picked, then changed by hand: the picked checkout's session no longer goes along.
    fireEvent.click(screen.getByRole('button', { name: 'Use checkout cs_demo_1 for the webhook simulation' }));
    fill('Simulate webhook', 'paymentSessionId', ' cs_other ');
    fill('Simulate webhook', 'Email', 'bob@example.com');
    expect(within(form('Simulate webhook')).queryByText(/Picked from the table/)).toBeNull();
    submit('Simulate webhook', 'Simulate webhook');
    expect(await within(form('Simulate webhook')).findByText('Duplicate')).toBeTruthy();
    expect(bodyOf(fetchMock, '/api/webhook-test.js')).toEqual({
      type: 'checkout.session.completed',
      paymentSessionId: 'cs_other',
      email: 'bob@example.com',
    });
  });

  it.each([
    ['Only checkout.session.completed can be simulated.', 'Error simulating webhook: Only checkout.session.completed can be simulated.'],
    ['Error simulating webhook: no such checkout', 'Error simulating webhook: no such checkout'],
  ])('says Error simulating webhook with the message %s', async (message, shown) => {
    mockDebugApi({ 'POST /api/webhook-test.js': { status: 400, body: { error: 'bad', message } } });
    renderPage();
    await ready();
    fill('Simulate webhook', 'paymentSessionId', 'cs_nope');
    fill('Simulate webhook', 'Email', 'ann@example.com');
    submit('Simulate webhook', 'Simulate webhook');
    expect((await within(form('Simulate webhook')).findByRole('alert')).textContent).toBe(shown);
  });

  it('cancels a pending reload when the page is left', async () => {
    const fetchMock = mockDebugApi({ 'POST /api/webhook-test.js': { body: { eventId: 'evt_sim_9', outcome: 'Processed' } } });
    const router = renderPage();
    await ready();
    fill('Simulate webhook', 'paymentSessionId', 'cs_demo_1');
    fill('Simulate webhook', 'Email', 'ann@example.com');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    submit('Simulate webhook', 'Simulate webhook');
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(within(form('Simulate webhook')).getByRole('status')).toBeTruthy();
    await act(() => router.navigate('/'));
    await act(() => vi.advanceTimersByTimeAsync(5000));
    expect(overviewCalls(fetchMock)).toBe(1);
  });
});
