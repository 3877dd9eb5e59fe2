import { fireEvent, render, screen } from '@testing-library/react';
import { mockApi } from '../../test/fetch-mock';
import { BillingActions } from './BillingActions';

describe('BillingActions', () => {
  it('cancels only after a confirmation and shows what the server said', async () => {
    const fetchMock = mockApi({
      'POST /api/billing/cancel': { body: { message: 'Your subscription is canceled.' } },
    });
    render(<BillingActions feeRefundable />);
    fireEvent.click(screen.getByRole('button', { name: 'Cancel subscription' }));
    expect(fetchMock.mock.calls.some(([url]) => url === '/api/billing/cancel')).toBe(false);
    fireEvent.click(screen.getByRole('button', { name: 'Keep my subscription' }));
    fireEvent.click(screen.getByRole('button', { name: 'Cancel subscription' }));
    fireEvent.click(screen.getByRole('button', { name: 'Yes, cancel' }));
    expect((await screen.findByRole('status')).textContent).toBe('Your subscription is canceled.');
  });

  it('asks for the fee back and shows a refusal as an alert', async () => {
    mockApi({
      'POST /api/billing/refund-fee': {
        status: 409,
        body: { error: 'already_refunded', message: 'Your $1 setup fee was already refunded.' },
      },
    });
    render(<BillingActions feeRefundable />);
    fireEvent.click(screen.getByRole('button', { name: 'Refund my $1 setup fee' }));
    fireEvent.click(screen.getByRole('button', { name: 'Yes, refund my $1' }));
    expect((await screen.findByRole('alert')).textContent).toBe('Your $1 setup fee was already refunded.');
    expect(screen.queryByRole('button', { name: 'Refund my $1 setup fee' })).toBeNull();
  });

  it('refunds only after a confirmation, then no longer offers it', async () => {
    const fetchMock = mockApi({
      'POST /api/billing/refund-fee': { body: { message: 'Your $1 setup fee is on its way back.' } },
    });
    render(<BillingActions feeRefundable />);
    fireEvent.click(screen.getByRole('button', { name: 'Refund my $1 setup fee' }));
    expect(screen.getByRole('group', { name: 'Refund your $1 setup fee' }).textContent).toContain('5-7 business days');
    expect(fetchMock.mock.calls.some(([url]) => url === '/api/billing/refund-fee')).toBe(false);
    fireEvent.click(screen.getByRole('button', { name: 'Keep it' }));
    expect(fetchMock.mock.calls.some(([url]) => url === '/api/billing/refund-fee')).toBe(false);
    fireEvent.click(screen.getByRole('button', { name: 'Refund my $1 setup fee' }));
    fireEvent.click(screen.getByRole('button', { name: 'Yes, refund my $1' }));
    expect((await screen.findByRole('status')).textContent).toBe('Your $1 setup fee is on its way back.');
    expect(screen.queryByRole('button', { name: 'Refund my $1 setup fee' })).toBeNull();
    expect(screen.getByRole('button', { name: 'Cancel subscription' })).toBeTruthy();
  });

  it('offers no refund when there is no fee to give back', () => {
    mockApi();
    render(<BillingActions feeRefundable={false} />);
    expect(screen.queryByRole('button', { name: 'Refund my $1 setup fee' })).toBeNull();
  });
});
