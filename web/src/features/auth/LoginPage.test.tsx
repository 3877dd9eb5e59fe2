import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { mockApi } from '../../test/fetch-mock';
import { LoginPage } from './LoginPage';

function renderLogin(path = '/login') {
  const router = createMemoryRouter(
    [
      { path: '/login', element: <LoginPage /> },
      { path: '/members', element: <h1>Members</h1> },
      { path: '/signup', element: <h1>Sign up</h1> },
    ],
    { initialEntries: [path] },
  );
  render(<RouterProvider router={router} />);
  return router;
}

const INVALID =
  'Invalid email or password. If you signed up through our instant checkout, you may need to reset your password.';

describe('LoginPage', () => {
  it('shows the heading, the sign-up link and signs in to /members', async () => {
    const fetchMock = mockApi({
      'POST /api/auth/login': { body: { user: { id: 'u1', email: 'ann@example.com' } } },
    });
    const router = renderLogin();
    expect(screen.getByRole('heading', { name: 'Sign in to your account' })).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Need an account? Sign up' }).getAttribute('href')).toBe('/signup');

    fireEvent.change(screen.getByLabelText('Email'), { target: { value: ' ann@example.com ' } });
    fireEvent.change(screen.getByLabelText('Password'), { target: { value: 'secret1' } });
    fireEvent.click(screen.getByRole('button', { name: 'Sign in' }));

    await waitFor(() => expect(router.state.location.pathname).toBe('/members'));
    const call = fetchMock.mock.calls.find(([url]) => url === '/api/auth/login');
    expect(JSON.parse(String(call?.[1]?.body))).toEqual({ email: 'ann@example.com', password: 'secret1' });
  });

  it('shows the spec text for a wrong password and prefixes other failures', async () => {
    let reply = { status: 401, body: { error: 'invalid_credentials', message: INVALID } };
    mockApi({ 'POST /api/auth/login': () => reply });
    renderLogin();
    fireEvent.change(screen.getByLabelText('Email'), { target: { value: 'ann@example.com' } });
    fireEvent.change(screen.getByLabelText('Password'), { target: { value: 'nope' } });
    fireEvent.click(screen.getByRole('button', { name: 'Sign in' }));
    expect((await screen.findByRole('alert')).textContent).toBe(INVALID);

    reply = { status: 500, body: { error: 'internal', message: 'Database down' } };
    fireEvent.click(screen.getByRole('button', { name: 'Sign in' }));
    await waitFor(() => expect(screen.getByRole('alert').textContent).toBe('Failed to log in: Database down'));
  });

  it('opens the reset section and reports what the server says', async () => {
    let reply: { status: number; body: unknown } = {
      status: 400,
      body: { error: 'invalid_email', message: 'Invalid email format. Please enter a valid email address.' },
    };
    mockApi({ 'POST /api/auth/reset': () => reply });
    renderLogin();
    fireEvent.click(screen.getByRole('button', { name: 'Forgot password?' }));
    const send = screen.getByRole('button', { name: 'Send reset link' });

    fireEvent.click(send);
    expect((await screen.findByRole('alert')).textContent).toBe('Please enter your email address');

    const form = screen.getByRole('form', { name: 'Reset your password' });
    fireEvent.change(form.querySelector('input') as HTMLInputElement, { target: { value: 'ann@example.com' } });
    fireEvent.click(send);
    await waitFor(() =>
      expect(screen.getByRole('alert').textContent).toBe('Invalid email format. Please enter a valid email address.'),
    );

    reply = { status: 200, body: { message: 'Password reset email sent! Check your inbox.' } };
    fireEvent.click(send);
    expect((await screen.findByRole('status')).textContent).toBe('Password reset email sent! Check your inbox.');
  });

  it('sets a new password from a reset link, checking that both fields match', async () => {
    const fetchMock = mockApi({
      'POST /api/auth/reset/check': { body: { valid: true } },
      'POST /api/auth/reset/confirm': { body: { user: { id: 'u1', email: 'ann@example.com' } } },
    });
    const router = renderLogin('/login?reset=tok');
    const password = await screen.findByLabelText('New password');
    fireEvent.change(password, { target: { value: 'new-secret' } });
    fireEvent.change(screen.getByLabelText('Confirm Password'), { target: { value: 'new-secreT' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save new password' }));
    expect((await screen.findByRole('alert')).textContent).toBe('Passwords do not match');

    fireEvent.change(screen.getByLabelText('Confirm Password'), { target: { value: 'new-secret' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save new password' }));
    await waitFor(() => expect(router.state.location.pathname).toBe('/members'));
    const call = fetchMock.mock.calls.find(([url]) => url === '/api/auth/reset/confirm');
    expect(JSON.parse(String(call?.[1]?.body))).toEqual({ token: 'tok', password: 'new-secret' });
  });

  it('says so when a reset link is spent, and offers a new one', async () => {
    mockApi({
      'POST /api/auth/reset/check': {
        status: 410,
        body: { error: 'reset_link_invalid', message: 'This password reset link has expired or was already used.' },
      },
    });
    renderLogin('/login?reset=old');
    expect((await screen.findByRole('alert')).textContent).toBe(
      'This password reset link has expired or was already used.',
    );
    expect(screen.getByRole('button', { name: 'Send reset link' })).toBeTruthy();
  });
});
