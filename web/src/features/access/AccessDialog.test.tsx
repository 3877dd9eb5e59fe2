import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { vi } from 'vitest';
import { PublicConfigProvider } from '../../lib/public-config';
import { SessionProvider, useSession } from '../../lib/session';
import { mockApi } from '../../test/fetch-mock';
import { AccessDialog } from './AccessDialog';

const FOUND = {
  email: 'ann@example.com',
  sessionId: 's1',
  paymentSessionId: 'cs_1',
  hasPassword: true,
  trialActive: true,
  trialEndDate: null,
};
const USER = { id: 'u1', email: 'ann@example.com' };
const found = { 'GET /api/checkout-success': { body: FOUND } };

function SignedInAs() {
  const { user } = useSession();
  return <p data-testid="signed-in">{user?.email ?? ''}</p>;
}

type Props = Partial<Parameters<typeof AccessDialog>[0]>;

function renderDialog(props: Props = {}, path = '/?session=s1') {
  const onClose = vi.fn<() => void>();
  const router = createMemoryRouter(
    [
      {
        path: '/',
        element: (
          <>
            <AccessDialog session="s1" onClose={onClose} {...props} />
            <SignedInAs />
          </>
        ),
      },
      { path: '/login', element: <h1>Sign in</h1> },
      { path: '/account-setup', element: <h1>Account setup</h1> },
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
  return { router, onClose };
}

function dialog() {
  return screen.getByRole('dialog', { name: 'Access Your Subscription' });
}

function fill(values: { email?: string; password?: string }) {
  if (values.email !== undefined) {
    fireEvent.change(within(dialog()).getByLabelText('Email'), { target: { value: values.email } });
  }
  if (values.password !== undefined) {
    fireEvent.change(within(dialog()).getByLabelText('Password'), { target: { value: values.password } });
  }
}

function click(name: string) {
  fireEvent.click(within(dialog()).getByRole('button', { name }));
}

async function alertText() {
  return (await within(dialog()).findByRole('alert')).textContent;
}

function bodyOf(fetchMock: ReturnType<typeof mockApi>, url: string) {
  const call = fetchMock.mock.calls.find(([input]) => input === url);
  return JSON.parse(String(call?.[1]?.body));
}

afterEach(() => {
  vi.useRealTimers();
});

describe('AccessDialog: checking', () => {
  it('looks the checkout up, prefills its email and asks for the password', async () => {
    let answer: (reply: { body: unknown }) => void = () => {};
    const fetchMock = mockApi({ 'GET /api/checkout-success': () => new Promise((resolve) => (answer = resolve)) });
    renderDialog();
    expect(within(dialog()).getByText('Looking up your account...')).toBeTruthy();
    await waitFor(() => expect(fetchMock.mock.calls.map(([url]) => url)).toContain('/api/checkout-success?session=s1'));

    answer({ body: FOUND });
    expect(await within(dialog()).findByRole('form', { name: 'Sign in' })).toBeTruthy();
    expect((within(dialog()).getByLabelText('Email') as HTMLInputElement).value).toBe('ann@example.com');
    expect(fetchMock.mock.calls.map(([url]) => url)).toContain('/api/checkout-success?session=s1');
  });

  it('sends an account the checkout created without a password to account setup', async () => {
    const fetchMock = mockApi({ 'GET /api/checkout-success': { body: { ...FOUND, hasPassword: false } } });
    const { router, onClose } = renderDialog();
    await waitFor(() => expect(router.state.location.pathname).toBe('/account-setup'));
    expect(router.state.location.search).toBe('?success=true&email=ann%40example.com&session=s1&session_id=cs_1');
    // Replaced, so Back does not open the dialog again.
    expect(router.state.historyAction).toBe('REPLACE');
    expect(screen.getByRole('heading', { level: 1, name: 'Account setup' })).toBeTruthy();
    expect(screen.queryByRole('form', { name: 'Sign in' })).toBeNull();
    expect(onClose).not.toHaveBeenCalled();
    expect(fetchMock.mock.calls.some(([, init]) => init?.method === 'POST')).toBe(false);
  });

  it('needs a session', async () => {
    const fetchMock = mockApi();
    renderDialog({ session: null }, '/');
    expect(await alertText()).toBe('No session information found. Please contact support.');
    expect(fetchMock.mock.calls.some(([url]) => String(url).startsWith('/api/checkout-success'))).toBe(false);
    expect(within(dialog()).getByRole('link', { name: 'support@helpnow.example' })).toBeTruthy();
  });

  it('says when the lookup fails', async () => {
    mockApi({
      'GET /api/checkout-success': {
        status: 404,
        body: { error: 'unknown_checkout', message: 'Error processing checkout success' },
      },
    });
    renderDialog();
    expect(await alertText()).toBe('Error checking for your account. Please try again or contact support.');
  });

  it('says when the checkout has no email', async () => {
    mockApi({ 'GET /api/checkout-success': { body: { ...FOUND, email: '' } } });
    renderDialog();
    expect(await alertText()).toBe(
      'Your account was created but email information is missing. Please contact support.',
    );
  });

  it('succeeds at once for someone already signed in, and goes to / after 2 seconds', async () => {
    let answer: (reply: { body: unknown }) => void = () => {};
    const fetchMock = mockApi({ 'GET /api/auth/me': () => new Promise((resolve) => (answer = resolve)) });
    const { router, onClose } = renderDialog();
    await waitFor(() => expect(fetchMock.mock.calls.map(([url]) => url)).toContain('/api/auth/me'));

    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    answer({ body: { user: USER } });
    await act(() => vi.advanceTimersByTimeAsync(0));
    const status = within(dialog()).getByText('Login successful! Redirecting to your account...');
    expect(status.getAttribute('role')).toBe('status');
    expect(fetchMock.mock.calls.some(([url]) => String(url).startsWith('/api/checkout-success'))).toBe(false);

    await act(() => vi.advanceTimersByTimeAsync(1999));
    expect(onClose).not.toHaveBeenCalled();
    expect(router.state.location.search).toBe('?session=s1');
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(onClose).toHaveBeenCalledTimes(1);
    expect(router.state.location.pathname).toBe('/');
    expect(router.state.location.search).toBe('');
  });

  it('starts at the sign-in form after a failed automatic sign-in', async () => {
    const fetchMock = mockApi();
    renderDialog({ session: null, startAt: 'login', initialEmail: 'ann@example.com' }, '/');
    expect(await within(dialog()).findByRole('form', { name: 'Sign in' })).toBeTruthy();
    expect((within(dialog()).getByLabelText('Email') as HTMLInputElement).value).toBe('ann@example.com');
    expect(fetchMock.mock.calls.some(([url]) => String(url).startsWith('/api/checkout-success'))).toBe(false);
  });
});

describe('AccessDialog: signing in', () => {
  it('needs both email and password', async () => {
    const fetchMock = mockApi(found);
    renderDialog();
    await within(dialog()).findByRole('form', { name: 'Sign in' });
    fill({ email: '' });
    fill({ password: 'secret1' });
    click('Sign In');
    expect(await alertText()).toBe('Please enter both email and password');
    fill({ email: 'ann@example.com', password: '' });
    click('Sign In');
    expect(await alertText()).toBe('Please enter both email and password');
    expect(fetchMock.mock.calls.some(([, init]) => init?.method === 'POST')).toBe(false);
  });

  it('signs in, says so and goes to / after 2 seconds', async () => {
    let answer: (reply: { body: unknown }) => void = () => {};
    const fetchMock = mockApi({
      ...found,
      'POST /api/auth/login': () => new Promise((resolve) => (answer = resolve)),
    });
    const { router, onClose } = renderDialog();
    await within(dialog()).findByRole('form', { name: 'Sign in' });
    fill({ password: 'secret1' });
    click('Sign In');
    expect(((await within(dialog()).findByRole('button', { name: 'Signing in...' })) as HTMLButtonElement).disabled).toBe(
      true,
    );
    expect(bodyOf(fetchMock, '/api/auth/login')).toEqual({ email: 'ann@example.com', password: 'secret1' });

    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    answer({ body: { user: USER } });
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(within(dialog()).getByRole('status').textContent).toBe('Login successful! Redirecting to your account...');
    expect(screen.getByTestId('signed-in').textContent).toBe('ann@example.com');

    await act(() => vi.advanceTimersByTimeAsync(1999));
    expect(onClose).not.toHaveBeenCalled();
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(onClose).toHaveBeenCalledTimes(1);
    expect(router.state.location.search).toBe('');
  });

  it.each([
    [401, 'invalid_credentials', 'Login failed. Please check your email and password.'],
    [500, 'internal', 'Login failed. Please check your email and password.'],
  ])('maps a %i %s to the catalogue', async (status, code, shown) => {
    mockApi({ ...found, 'POST /api/auth/login': { status, body: { error: code, message: 'server words' } } });
    renderDialog();
    await within(dialog()).findByRole('form', { name: 'Sign in' });
    fill({ password: 'nope' });
    click('Sign In');
    expect(await alertText()).toBe(shown);
    expect((within(dialog()).getByRole('button', { name: 'Sign In' }) as HTMLButtonElement).disabled).toBe(false);
  });
});

describe('AccessDialog: creating an account', () => {
  async function createMode() {
    await within(dialog()).findByRole('form', { name: 'Sign in' });
    click('Create an account instead');
    expect(within(dialog()).getByRole('form', { name: 'Create an account' })).toBeTruthy();
  }

  it('toggles between the two modes', async () => {
    mockApi(found);
    renderDialog();
    await createMode();
    expect(within(dialog()).queryByRole('button', { name: 'Forgot password?' })).toBeNull();
    // The spec's create mode needs only an email; the password comes later, by mail.
    expect(within(dialog()).queryByLabelText('Password')).toBeNull();
    click('Sign in instead');
    expect(within(dialog()).getByRole('form', { name: 'Sign in' })).toBeTruthy();
  });

  it('needs an email', async () => {
    mockApi(found);
    renderDialog();
    await createMode();
    fill({ email: ' ' });
    click('Create Account');
    expect(await alertText()).toBe('Please enter your email address to create an account');
  });

  it('creates the account, says so and goes to / after 2 seconds', async () => {
    let answer: (reply: { status: number; body: unknown }) => void = () => {};
    const fetchMock = mockApi({
      ...found,
      'POST /api/auth/signup': () => new Promise((resolve) => (answer = resolve)),
    });
    const { onClose } = renderDialog();
    await createMode();
    click('Create Account');
    await within(dialog()).findByRole('button', { name: 'Creating account...' });
    expect(bodyOf(fetchMock, '/api/auth/signup')).toEqual({ email: 'ann@example.com', setPasswordByMail: true });

    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    answer({ status: 201, body: { user: USER } });
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(within(dialog()).getByRole('status').textContent).toBe(
      "Account created successfully! We've sent a confirmation email. Redirecting to your account...",
    );
    await act(() => vi.advanceTimersByTimeAsync(1999));
    expect(onClose).not.toHaveBeenCalled();
    await act(() => vi.advanceTimersByTimeAsync(1));
    expect(onClose).toHaveBeenCalledTimes(1);
  });

  it('says when the email already has an account', async () => {
    mockApi({
      ...found,
      'POST /api/auth/signup': {
        status: 409,
        body: { error: 'email_in_use', message: 'An account with this email already exists. Please sign in instead.' },
      },
    });
    renderDialog();
    await createMode();
    click('Create Account');
    expect(await alertText()).toBe('An account with this email already exists. Please sign in instead.');
  });

  it("gives other errors with the server's message", async () => {
    mockApi({
      ...found,
      'POST /api/auth/signup': {
        status: 400,
        body: { error: 'invalid_email', message: 'Please enter a valid email address.' },
      },
    });
    renderDialog();
    await createMode();
    fill({ email: 'ann@' });
    click('Create Account');
    expect(await alertText()).toBe('Error creating account: Please enter a valid email address.');
  });
});

describe('AccessDialog: forgot password', () => {
  const SENT =
    "Password reset email sent! Check your inbox for instructions to reset your password. If you don't see it, check your spam folder.";

  it('needs an email first', async () => {
    const fetchMock = mockApi();
    renderDialog({ session: null, startAt: 'login' }, '/');
    await within(dialog()).findByRole('form', { name: 'Sign in' });
    click('Forgot password?');
    expect(await alertText()).toBe('Please enter your email address first');
    expect(fetchMock.mock.calls.some(([url]) => url === '/api/auth/reset')).toBe(false);
  });

  it('sends the reset mail to the email in the form', async () => {
    const fetchMock = mockApi({ ...found, 'POST /api/auth/reset': { body: { message: SENT } } });
    renderDialog();
    await within(dialog()).findByRole('form', { name: 'Sign in' });
    click('Forgot password?');
    expect((await within(dialog()).findByRole('status')).textContent).toBe(SENT);
    expect(bodyOf(fetchMock, '/api/auth/reset')).toEqual({ email: 'ann@example.com' });
  });

  it('says when the reset mail could not be sent', async () => {
    mockApi({
      ...found,
      'POST /api/auth/reset': {
        status: 500,
        body: { error: 'internal', message: 'Something went wrong on our side.' },
      },
    });
    renderDialog();
    await within(dialog()).findByRole('form', { name: 'Sign in' });
    click('Forgot password?');
    expect(await alertText()).toBe('Error sending password reset email. Please try again.');
  });
});
