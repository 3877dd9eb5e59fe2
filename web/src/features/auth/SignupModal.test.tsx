import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { mockApi } from '../../test/fetch-mock';
import { SignupModal } from './SignupModal';

function renderModal() {
  const router = createMemoryRouter(
    [
      { path: '/landing', element: <SignupModal onClose={() => {}} /> },
      { path: '/members', element: <h1>Members</h1> },
    ],
    { initialEntries: ['/landing'] },
  );
  render(<RouterProvider router={router} />);
  return router;
}

function fillAndSubmit() {
  fireEvent.change(screen.getByLabelText('Email'), { target: { value: 'ann@example.com' } });
  fireEvent.change(screen.getByLabelText('Password'), { target: { value: 'secret123' } });
  fireEvent.click(screen.getByRole('button', { name: 'Create Account' }));
}

describe('SignupModal', () => {
  it('has required email and password fields and a link to log in', () => {
    mockApi();
    renderModal();
    const email = screen.getByLabelText('Email') as HTMLInputElement;
    expect(email.type).toBe('email');
    expect(email.required).toBe(true);
    expect((screen.getByLabelText('Password') as HTMLInputElement).required).toBe(true);
    expect(screen.getByRole('link', { name: 'Log in' }).getAttribute('href')).toBe('/login');
  });

  it('disables the button while submitting and shows the server message on failure', async () => {
    let answer: (value: { status: number; body: unknown }) => void = () => {};
    const fetchMock = mockApi({
      'POST /api/auth/signup': () => new Promise((resolve) => (answer = resolve)),
    });
    renderModal();
    fillAndSubmit();

    const busy = await screen.findByRole('button', { name: 'Creating account...' });
    expect((busy as HTMLButtonElement).disabled).toBe(true);
    const call = fetchMock.mock.calls.find(([url]) => url === '/api/auth/signup');
    expect(JSON.parse(String(call?.[1]?.body))).toEqual({ email: 'ann@example.com', password: 'secret123' });

    answer({ status: 404, body: { error: 'not_found', message: 'Not found' } });
    expect((await screen.findByRole('alert')).textContent).toBe('Failed to create an account: Not found');
    expect((screen.getByRole('button', { name: 'Create Account' }) as HTMLButtonElement).disabled).toBe(false);
  });

  it('goes to /members after a successful signup when nothing else follows', async () => {
    mockApi({ 'POST /api/auth/signup': { status: 201, body: { user: { id: 'u1', email: 'ann@example.com' } } } });
    const router = renderModal();
    fillAndSubmit();
    await waitFor(() => expect(router.state.location.pathname).toBe('/members'));
  });
});
