import { fireEvent, render, screen } from '@testing-library/react';
import { mockApi } from '../../test/fetch-mock';
import { HeldPayments } from './HeldPayments';

const HELD = { id: 'hn_abc', paidAt: '2026-11-20T10:00:00Z', setupFee: true, expiresAt: '2026-11-23T10:00:00Z' };

describe('HeldPayments', () => {
  it('shows nothing when no payment waits', async () => {
    const fetchMock = mockApi({ 'GET /api/billing/held': { body: { held: [] } } });
    const { container } = render(<HeldPayments email="ann@example.com" onChanged={() => {}} />);
    await vi.waitFor(() => expect(fetchMock).toHaveBeenCalled());
    expect(container.textContent).toBe('');
  });

  it('points to the mailed link while the address is not proved, with nothing to press', async () => {
    mockApi({ 'GET /api/billing/held': { body: { held: [], waitingForProof: true } } });
    render(<HeldPayments email="ann@example.com" onChanged={() => {}} />);
    expect(await screen.findByRole('heading', { name: 'A payment is waiting for you' })).toBeTruthy();
    expect(
      screen.getByText(
        "A payment for HelpNow was made with your email address. To see it and add it to your account, open the link in the email we sent to ann@example.com about it (after an hour, use 'Forgot password?' on the sign-in page instead).",
      ),
    ).toBeTruthy();
    expect(screen.queryByRole('button')).toBeNull();
  });

  it('adds a waiting payment to the account and tells the page', async () => {
    const onChanged = vi.fn<() => void>();
    const fetchMock = mockApi({
      'GET /api/billing/held': { body: { held: [HELD] } },
      'POST /api/billing/held/hn_abc/claim': { body: { message: 'The payment was added to your account.' } },
    });
    render(<HeldPayments email="ann@example.com" onChanged={onChanged} />);
    expect((await screen.findByRole('heading', { name: 'A payment is waiting for you' })).textContent).toBeTruthy();
    expect(screen.getByText(/Nothing in your account has changed/).textContent).toContain('November 20, 2026');
    fireEvent.click(screen.getByRole('button', { name: 'Add it to my account' }));
    expect((await screen.findByRole('status')).textContent).toBe('The payment was added to your account.');
    expect(onChanged).toHaveBeenCalledOnce();
    expect(screen.queryByRole('button', { name: 'Add it to my account' })).toBeNull();
    expect(fetchMock.mock.calls.some(([url]) => url === '/api/billing/held/hn_abc/decline')).toBe(false);
  });

  it('declines a payment that was not the member', async () => {
    const onChanged = vi.fn<() => void>();
    mockApi({
      'GET /api/billing/held': { body: { held: [HELD] } },
      'POST /api/billing/held/hn_abc/decline': {
        body: { message: 'The payment was canceled and refunded. Nothing in your account changed.' },
      },
    });
    render(<HeldPayments email="ann@example.com" onChanged={onChanged} />);
    fireEvent.click(await screen.findByRole('button', { name: 'Not me: cancel it' }));
    expect((await screen.findByRole('status')).textContent).toContain('canceled and refunded');
    expect(onChanged).not.toHaveBeenCalled();
  });
});
