import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { vi } from 'vitest';
import { renderApp } from '../testing';
import { mockApi } from '../../test/fetch-mock';
import type { User } from '../../lib/auth';
import type { FakeSocket, SocketOptions } from '../../test/fake-socket';

// The chat connects for members with access; these tests play no server, so nothing answers.
const sockets = vi.hoisted(() => [] as FakeSocket[]);

vi.mock('socket.io-client', async () => {
  const { FakeSocket } = await import('../../test/fake-socket');
  return {
    io: (namespace: string, options: SocketOptions) => {
      const socket = new FakeSocket(namespace, options);
      sockets.push(socket);
      return socket;
    },
  };
});

const NO_ACCESS = { hasAccess: false, trialActive: false, hasActiveSubscription: false, trialEndDate: null };
const TRIAL = { hasAccess: true, trialActive: true, hasActiveSubscription: false, trialEndDate: '2030-01-08T12:00:00Z' };
const SUBSCRIBED = { hasAccess: true, trialActive: false, hasActiveSubscription: true, trialEndDate: null };

function member(overrides: Partial<User> = {}): User {
  return { id: 'u1', email: 'ann@example.com', hasPassword: true, access: NO_ACCESS, pendingSetup: null, ...overrides };
}

function signedInAs(user: User) {
  return { 'GET /api/auth/me': { body: { user } } };
}

function requestsTo(fetchMock: ReturnType<typeof mockApi>, path: string) {
  return fetchMock.mock.calls.filter(([url]) => url === path);
}

beforeEach(() => {
  sockets.length = 0;
});

afterEach(() => {
  vi.useRealTimers();
});

const CHAT_HEADING = 'HelpNow AI assist, ask anything!';

describe('MembersPage for each kind of person', () => {
  it('shows a visitor the trial offer, a sign-in panel and the chat, unconnected', async () => {
    mockApi();
    await renderApp('/');

    expect(screen.getByRole('heading', { level: 1, name: 'Welcome to HelpNow' })).toBeTruthy();
    const signIn = await screen.findByRole('form', { name: 'Sign in' });
    expect((within(signIn).getByLabelText('Email') as HTMLInputElement).required).toBe(true);
    expect(screen.getByRole('link', { name: 'Need an account? Sign up' }).getAttribute('href')).toBe('/signup');
    expect(screen.getByRole('link', { name: 'Forgot password?' }).getAttribute('href')).toBe('/login');
    fireEvent.click(screen.getByRole('button', { name: 'Start Your Trial for $1' }));
    const prompt = screen.getByRole('dialog', { name: 'Get Unlimited AI Access!' });
    expect(within(prompt).getByRole('link', { name: 'Login to Continue' })).toBeTruthy();
    fireEvent.click(within(prompt).getByRole('button', { name: 'Close' }));
    expect(screen.getByRole('heading', { name: CHAT_HEADING })).toBeTruthy();
    expect(sockets).toHaveLength(0);
  });

  it('signs a visitor in on the page and then shows what their account has', async () => {
    let current: User | null = null;
    const fetchMock = mockApi({
      'GET /api/auth/me': () => ({ body: { user: current } }),
      'POST /api/auth/login': () => {
        current = member({ access: TRIAL });
        return { body: { user: { id: 'u1', email: 'ann@example.com' } } };
      },
    });
    await renderApp('/');
    const signIn = await screen.findByRole('form', { name: 'Sign in' });
    fireEvent.change(within(signIn).getByLabelText('Email'), { target: { value: ' ann@example.com ' } });
    fireEvent.change(within(signIn).getByLabelText('Password'), { target: { value: 'secret1' } });
    fireEvent.click(within(signIn).getByRole('button', { name: 'Sign in' }));

    expect(await screen.findByText('Trial Active')).toBeTruthy();
    expect(screen.queryByRole('form', { name: 'Sign in' })).toBeNull();
    expect(screen.getByRole('link', { name: 'Logout' })).toBeTruthy();
    const [call] = requestsTo(fetchMock, '/api/auth/login');
    expect(JSON.parse(String(call[1]?.body))).toEqual({ email: 'ann@example.com', password: 'secret1' });
  });

  it('asks for the access facts once when arriving from the sign-in page', async () => {
    let current: User | null = null;
    const fetchMock = mockApi({
      'GET /api/auth/me': () => ({ body: { user: current } }),
      'POST /api/auth/login': () => {
        current = member({ access: SUBSCRIBED });
        return { body: { user: { id: 'u1', email: 'ann@example.com' } } };
      },
    });
    const router = await renderApp('/login');
    fireEvent.change(await screen.findByLabelText('Email'), { target: { value: 'ann@example.com' } });
    fireEvent.change(screen.getByLabelText('Password'), { target: { value: 'secret1' } });
    fireEvent.click(screen.getByRole('button', { name: 'Sign in' }));

    await waitFor(() => expect(router.state.location.pathname).toBe('/'));
    expect(await screen.findByText('Subscription active')).toBeTruthy();
    expect(requestsTo(fetchMock, '/api/auth/me')).toHaveLength(2);
  });

  it('offers the trial when the access facts cannot be had', async () => {
    let meCalls = 0;
    mockApi({
      'GET /api/auth/me': () => {
        meCalls += 1;
        return meCalls === 1
          ? { body: { user: null } }
          : { status: 503, body: { error: 'unavailable', message: 'Try later' } };
      },
      'POST /api/auth/login': { body: { user: { id: 'u1', email: 'ann@example.com' } } },
    });
    await renderApp('/');
    const signIn = await screen.findByRole('form', { name: 'Sign in' });
    fireEvent.change(within(signIn).getByLabelText('Email'), { target: { value: 'ann@example.com' } });
    fireEvent.change(within(signIn).getByLabelText('Password'), { target: { value: 'secret1' } });
    fireEvent.click(within(signIn).getByRole('button', { name: 'Sign in' }));

    expect(await screen.findByRole('button', { name: 'Start Your 7-Day Trial for $1' })).toBeTruthy();
    expect(screen.queryByText('Loading your account...')).toBeNull();
    expect(meCalls).toBe(2);
  });

  it.each([
    [
      401,
      'invalid_credentials',
      'Invalid email or password. If you signed up through our instant checkout, you may need to reset your password.',
      'Invalid email or password. If you signed up through our instant checkout, you may need to reset your password.',
    ],
    [
      429,
      'too_many_requests',
      'Too many failed login attempts. Please try again later or reset your password.',
      'Too many failed login attempts. Please try again later or reset your password.',
    ],
    [500, 'internal', 'Something broke', 'Failed to log in: Something broke'],
  ])('shows the sign-in error for a %i %s', async (status, code, message, shown) => {
    mockApi({ 'POST /api/auth/login': { status, body: { error: code, message } } });
    await renderApp('/');
    const signIn = await screen.findByRole('form', { name: 'Sign in' });
    fireEvent.change(within(signIn).getByLabelText('Email'), { target: { value: 'ann@example.com' } });
    fireEvent.change(within(signIn).getByLabelText('Password'), { target: { value: 'nope' } });
    fireEvent.click(within(signIn).getByRole('button', { name: 'Sign in' }));
    expect((await within(signIn).findByRole('alert')).textContent).toBe(shown);
  });

  it('offers a member without access the trial, which opens the trial prompt', async () => {
    mockApi(signedInAs(member()));
    await renderApp('/');
    fireEvent.click(await screen.findByRole('button', { name: 'Start Your 7-Day Trial for $1' }));

    const prompt = screen.getByRole('dialog', { name: 'Get Unlimited AI Access!' });
    expect(within(prompt).getByRole('button', { name: 'Start Your 7-Day Trial for $1' })).toBeTruthy();
    expect(screen.queryByRole('form', { name: 'Sign in' })).toBeNull();
    expect(screen.getByRole('heading', { name: CHAT_HEADING })).toBeTruthy();
    expect(sockets).toHaveLength(0);
  });

  it('shows a payment confirmed while the page is open, without a reload', async () => {
    let paid = false;
    const fetchMock = mockApi({
      'GET /api/auth/me': () => ({ body: { user: member(paid ? { access: TRIAL } : {}) } }),
      'POST /api/check-subscription.js': () => ({
        body: { hasActiveSubscription: paid, trialActive: paid, trialEndDate: paid ? TRIAL.trialEndDate : null, subscription: null },
      }),
    });
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    await renderApp('/');
    await screen.findByRole('button', { name: 'Start Your 7-Day Trial for $1' });
    // Asked at once, with the member's own id.
    await waitFor(() => expect(requestsTo(fetchMock, '/api/check-subscription.js')).toHaveLength(1));
    expect(JSON.parse(String(requestsTo(fetchMock, '/api/check-subscription.js')[0]?.[1]?.body))).toEqual({
      userId: 'u1',
    });

    // The webhook arrives; within the spec's 15 s the page knows.
    paid = true;
    await act(() => vi.advanceTimersByTimeAsync(15_000));
    expect(await screen.findByText('Trial Active')).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Start Your 7-Day Trial for $1' })).toBeNull();
    const checks = requestsTo(fetchMock, '/api/check-subscription.js').length;
    // With access, no more checks.
    await act(() => vi.advanceTimersByTimeAsync(60_000));
    expect(requestsTo(fetchMock, '/api/check-subscription.js')).toHaveLength(checks);
  });

  it('keeps a member signed in, as last seen, when the server cannot be reached', async () => {
    window.localStorage.setItem('user-info', JSON.stringify({ data: member({ access: TRIAL }) }));
    mockApi({ 'GET /api/auth/me': { status: 503, body: { error: 'unavailable', message: 'Try again' } } });
    await renderApp('/');
    expect((await screen.findAllByText('ann@example.com')).length).toBeGreaterThan(0);
    expect(screen.getByText(/We can.t reach HelpNow right now/)).toBeTruthy();
    expect(screen.getByText('Trial Active')).toBeTruthy();
    expect(screen.queryByRole('form', { name: 'Sign in' })).toBeNull();
  });

  it('shows an active trial with its end date', async () => {
    mockApi(signedInAs(member({ access: TRIAL })));
    await renderApp('/');
    expect(await screen.findByText('Trial Active')).toBeTruthy();
    expect(screen.getByText('Your trial runs until January 8, 2030')).toBeTruthy();
    expect(screen.queryByText('Subscription active')).toBeNull();
    expect(screen.queryByRole('button', { name: /Start Your/ })).toBeNull();
    expect(screen.getByRole('heading', { name: CHAT_HEADING })).toBeTruthy();
    // The socket opens in an effect after the render (a busy machine can be between the two).
    await waitFor(() => expect(sockets.map((socket) => socket.namespace)).toEqual(['/member']));
  });

  it('asks nothing of a session that must choose a password first: it goes to account setup', async () => {
    // A mailed link proved the address: the server answers this session 403 choose_password to
    // everything until it has chosen one, so the page must not ask (a browser would log the 403).
    const fetchMock = mockApi(signedInAs(member({ access: TRIAL, mustChoosePassword: true })));
    const router = await renderApp('/');
    await waitFor(() => expect(router.state.location.pathname).toBe('/account-setup'));
    expect(requestsTo(fetchMock, '/api/billing/held')).toEqual([]);
  });

  it('shows an active subscription', async () => {
    mockApi(signedInAs(member({ access: SUBSCRIBED })));
    await renderApp('/');
    expect(await screen.findByText('Subscription active')).toBeTruthy();
    expect(screen.queryByText('Trial Active')).toBeNull();
  });

  it('asks an account from a checkout to complete its setup', async () => {
    mockApi(
      signedInAs(
        member({
          hasPassword: false,
          access: TRIAL,
          pendingSetup: { email: 'ann@example.com', session: 's1', paymentSessionId: 'cs_1' },
        }),
      ),
    );
    await renderApp('/');
    expect(await screen.findByRole('heading', { name: 'Complete Your Account Setup' })).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Complete Setup' }).getAttribute('href')).toBe(
      '/account-setup?email=ann%40example.com&session=s1&session_id=cs_1&success=true',
    );
  });

  it('shows no setup banner for an account with a password', async () => {
    mockApi(signedInAs(member({ access: TRIAL })));
    await renderApp('/');
    await screen.findByText('Trial Active');
    expect(screen.queryByText('Complete Your Account Setup')).toBeNull();
  });
});

describe('MembersPage address handling', () => {
  it('sends success=true with an email and a session on to account setup', async () => {
    mockApi();
    const router = await renderApp('/?success=true&email=ann%40example.com&session=s1&session_id=cs_1');
    await waitFor(() => expect(router.state.location.pathname).toBe('/account-setup'));
    expect(Object.fromEntries(new URLSearchParams(router.state.location.search))).toEqual({
      success: 'true',
      email: 'ann@example.com',
      session: 's1',
      session_id: 'cs_1',
    });
    expect(router.state.historyAction).toBe('REPLACE');
  });

  it('signs in with the jwt, strips the parameters and welcomes the person', async () => {
    let current: User | null = null;
    const fetchMock = mockApi({
      'GET /api/auth/me': () => ({ body: { user: current } }),
      'POST /api/auth/token': () => {
        current = member({ access: TRIAL });
        return { body: { user: { id: 'u1', email: 'ann@example.com' } } };
      },
    });
    const router = await renderApp('/?success=true&jwt=tok123');

    const welcome = await screen.findByRole('dialog', { name: 'Welcome to HelpNow!' });
    expect(router.state.location.search).toBe('');
    const [call] = requestsTo(fetchMock, '/api/auth/token');
    expect(JSON.parse(String(call[1]?.body))).toEqual({ token: 'tok123' });
    expect(await screen.findByText('ann@example.com')).toBeTruthy();

    fireEvent.click(within(welcome).getByRole('button', { name: 'Start Using HelpNow' }));
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(await screen.findByText('Trial Active')).toBeTruthy();
  });

  it("signs in with the checkout's cookie and cleans the address 1 second later", async () => {
    let answer: (reply: { body: unknown }) => void = () => {};
    let current: User | null = null;
    const fetchMock = mockApi({
      'GET /api/auth/me': () => ({ body: { user: current } }),
      'POST /api/auth/token': () => new Promise((resolve) => (answer = resolve)),
    });
    const router = await renderApp('/?success=true');

    await waitFor(() => expect(requestsTo(fetchMock, '/api/auth/token')).toHaveLength(1));
    expect(JSON.parse(String(requestsTo(fetchMock, '/api/auth/token')[0][1]?.body))).toEqual({});
    expect(screen.getByText('Signing you in...')).toBeTruthy();

    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    current = member({ hasPassword: false, access: TRIAL });
    answer({ body: { user: { id: 'u1', email: 'ann@example.com' } } });
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(screen.getByRole('dialog', { name: 'Welcome to HelpNow!' })).toBeTruthy();
    expect(screen.getByText('Trial Active')).toBeTruthy();
    expect(router.state.location.search).toBe('?success=true');

    await act(() => vi.advanceTimersByTimeAsync(999));
    expect(router.state.location.search).toBe('?success=true');
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(router.state.location.search).toBe('');
    expect(router.state.location.pathname).toBe('/');
    // Cleaning the address does not start a second sign-in.
    expect(requestsTo(fetchMock, '/api/auth/token')).toHaveLength(1);
  });

  it('posts the one-time token once even when React runs effects twice', async () => {
    let current: User | null = null;
    const fetchMock = mockApi({
      'GET /api/auth/me': () => ({ body: { user: current } }),
      'POST /api/auth/token': () => {
        current = member({ access: TRIAL });
        return { body: { user: { id: 'u1', email: 'ann@example.com' } } };
      },
    });
    // Arriving from another page, the session is already known when the members page mounts.
    const router = await renderApp('/landing', { strict: true });
    await screen.findByRole('link', { name: 'Login' });
    await act(() => router.navigate('/?success=true&jwt=tok123'));

    await screen.findByRole('dialog', { name: 'Welcome to HelpNow!' });
    await screen.findByText('Trial Active');
    expect(requestsTo(fetchMock, '/api/auth/token')).toHaveLength(1);
  });

  it('opens the post-checkout sign-in when the automatic sign-in fails', async () => {
    mockApi({
      'POST /api/auth/token': {
        status: 401,
        body: { error: 'invalid_token', message: 'This sign-in link has expired or was already used.' },
      },
    });
    const router = await renderApp('/?success=true&email=ann%40example.com');

    const dialog = await screen.findByRole('dialog', { name: 'Access Your Subscription' });
    expect((within(dialog).getByLabelText('Email') as HTMLInputElement).value).toBe('ann@example.com');
    expect(within(dialog).getByRole('button', { name: 'Sign In' })).toBeTruthy();
    expect(router.state.location.search).toBe('');
  });

  it('only tidies the address for someone already signed in back from a checkout', async () => {
    const fetchMock = mockApi(signedInAs(member({ access: TRIAL })));
    const router = await renderApp('/?success=true');
    await waitFor(() => expect(router.state.location.search).toBe(''));
    expect(requestsTo(fetchMock, '/api/auth/token')).toHaveLength(0);
    expect(screen.queryByRole('dialog')).toBeNull();
  });

  it('uses a mailed link when signed in already (it proves the address), and only tidies a spent one', async () => {
    const fetchMock = mockApi({
      ...signedInAs(member({ access: TRIAL })),
      'POST /api/auth/token': {
        status: 401,
        body: { error: 'invalid_token', message: 'This sign-in link has expired or was already used.' },
      },
    });
    const router = await renderApp(`/?success=true&jwt=tok123&email=${encodeURIComponent(member().email)}`);
    await waitFor(() => expect(router.state.location.search).toBe(''));
    expect(requestsTo(fetchMock, '/api/auth/token')).toHaveLength(1);
    expect(screen.queryByRole('dialog')).toBeNull();
  });

  it('welcomes back an existing account and points to the sign-in page', async () => {
    mockApi();
    const router = await renderApp('/?existing=true&email=ann%40example.com');
    const dialog = await screen.findByRole('dialog', { name: 'Welcome Back!' });
    expect(dialog.textContent).toContain('ann@example.com');
    const login = within(dialog).getByRole('link', { name: 'Login to Your Account' });
    expect(login.getAttribute('href')).toBe('/login?email=ann%40example.com');
    expect(router.state.location.search).toBe('');

    fireEvent.click(login);
    await waitFor(() => expect(router.state.location.pathname).toBe('/login'));
    expect(router.state.location.search).toBe('?email=ann%40example.com');
  });

  it('says calmly that a canceled checkout charged nothing, with the trial button', async () => {
    mockApi(signedInAs(member()));
    const router = await renderApp('/?canceled=true');
    const notice = (await screen.findByRole('heading', { name: 'Checkout canceled' })).closest('section')!;
    expect(notice.textContent).toContain('nothing was charged');
    expect(within(notice).getByRole('button', { name: 'Start Your 7-Day Trial for $1' })).toBeTruthy();
    expect(router.state.location.search).toBe('');

    fireEvent.click(within(notice).getByRole('button', { name: 'Dismiss' }));
    expect(screen.queryByRole('heading', { name: 'Checkout canceled' })).toBeNull();
  });

  it('words the canceled notice for a visitor', async () => {
    mockApi();
    await renderApp('/?canceled=true');
    const notice = (await screen.findByRole('heading', { name: 'Checkout canceled' })).closest('section')!;
    expect(within(notice).getByRole('button', { name: 'Start Your Trial for $1' })).toBeTruthy();
  });

  it('says when the checkout could not be opened, with Try again', async () => {
    mockApi();
    await renderApp('/?success=demo');
    const notice = (await screen.findByRole('heading', { name: 'We could not open the checkout' })).closest('section')!;
    expect(within(notice).getByRole('button', { name: 'Try again' })).toBeTruthy();
  });

  it("opens the trial prompt from the header's Subscribe link", async () => {
    mockApi();
    const router = await renderApp('/');
    const subscribe = await screen.findByRole('link', { name: 'Subscribe' });
    expect(subscribe.getAttribute('href')).toBe('/?subscribe=true');

    fireEvent.click(subscribe);
    const prompt = await screen.findByRole('dialog', { name: 'Get Unlimited AI Access!' });
    expect(within(prompt).getByRole('button', { name: 'Start Your Trial for $1' })).toBeTruthy();
    await waitFor(() => expect(router.state.location.search).toBe(''));

    // Closed and asked for again, it opens again.
    fireEvent.click(within(prompt).getByRole('button', { name: 'Close' }));
    expect(screen.queryByRole('dialog')).toBeNull();
    fireEvent.click(screen.getByRole('link', { name: 'Subscribe' }));
    expect(await screen.findByRole('dialog', { name: 'Get Unlimited AI Access!' })).toBeTruthy();
  });

  it('opens Access Your Subscription for a session parameter alone', async () => {
    const fetchMock = mockApi({
      'GET /api/checkout-success': {
        body: {
          email: 'ann@example.com',
          sessionId: 's1',
          paymentSessionId: 'cs_1',
          hasPassword: true,
          trialActive: true,
          trialEndDate: null,
        },
      },
    });
    await renderApp('/?session=s1');
    const dialog = await screen.findByRole('dialog', { name: 'Access Your Subscription' });
    await waitFor(() =>
      expect((within(dialog).getByLabelText('Email') as HTMLInputElement).value).toBe('ann@example.com'),
    );
    expect(fetchMock.mock.calls.map(([url]) => url)).toContain('/api/checkout-success?session=s1');
  });
});
