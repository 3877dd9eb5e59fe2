import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { mockApi } from '../../test/fetch-mock';
import { DECLINE_FAILED, HELD_UNREADABLE, HeldPayments, NONE_HELD } from './HeldPayments';
import type { HeldPayment } from './operations-api';

const ANN: HeldPayment = {
  id: 'h1',
  email: 'ann@example.com',
  paidAt: '2026-11-20T14:05:00Z',
  expiresAt: '2026-11-27T14:05:00Z',
  setupFee: true,
};
const BOB: HeldPayment = {
  id: 'h2',
  email: 'bob@example.com',
  paidAt: '2026-11-21T09:30:00Z',
  expiresAt: '2026-11-28T09:30:00Z',
  setupFee: false,
};
const NOT_HELD = {
  status: 404,
  body: { error: 'not_held', message: 'This payment is no longer waiting: it was added or canceled already.' },
};

async function rowOf(email: string) {
  const table = await screen.findByRole('table', { name: /waiting for their owner/ });
  return within(table).getByRole('row', { name: new RegExp(email) });
}

function posted(fetchMock: ReturnType<typeof mockApi>): string[] {
  return fetchMock.mock.calls.filter(([, init]) => init?.method === 'POST').map(([input]) => String(input));
}

describe('HeldPayments', () => {
  it('lists the payments waiting for their owner and mails an owner again', async () => {
    const fetchMock = mockApi({
      'GET /api/admin/held': { body: { held: [ANN, BOB] } },
      'POST /api/admin/held/h1/remind': { body: { message: 'ann@example.com was mailed about the payment again.' } },
    });
    render(<HeldPayments />);
    expect(screen.getByRole('heading', { name: 'Held payments' })).toBeTruthy();
    expect(screen.getByText(/canceled and refunded by itself/)).toBeTruthy();

    const table = await screen.findByRole('table', { name: '2 payments waiting for their owner' });
    expect(within(table).getAllByRole('columnheader').map((cell) => cell.textContent)).toEqual([
      "Owner's address",
      'Paid',
      'Waits until',
      'Setup fee',
      'What you can do',
    ]);
    const ann = await rowOf('ann@example.com');
    expect(within(ann).getByRole('rowheader').textContent).toBe('ann@example.com');
    // A moment breaks after its day only (its other spaces are no-break ones).
    const cells = within(ann).getAllByRole('cell').map((cell) => cell.textContent ?? '');
    expect(cells[0]).toBe('20\u00a0Nov\u00a02026, 14:05\u00a0UTC');
    expect(cells.map((text) => text.replace(/\u00a0/g, ' ')).slice(0, 3)).toEqual([
      '20 Nov 2026, 14:05 UTC',
      '27 Nov 2026, 14:05 UTC',
      'Yes ($1)',
    ]);
    expect(within(await rowOf('bob@example.com')).getByText('No')).toBeTruthy();

    const mail = within(ann).getByRole('button', { name: 'Mail the owner again' });
    // Each row's buttons say whose payment they act on.
    expect(mail.getAttribute('aria-describedby')).toBe(within(ann).getByRole('rowheader').id);
    fireEvent.click(mail);
    expect(within(ann).getByRole('button', { name: 'Mailing...' }).hasAttribute('disabled')).toBe(true);
    expect((await screen.findByRole('status')).textContent).toBe('ann@example.com was mailed about the payment again.');
    expect(posted(fetchMock)).toEqual(['/api/admin/held/h1/remind']);
    // The payment still waits.
    expect(await rowOf('ann@example.com')).toBeTruthy();
  });

  it('cancels and refunds a payment only once asked, and takes it off the list', async () => {
    const fetchMock = mockApi({
      'GET /api/admin/held': { body: { held: [ANN] } },
      'POST /api/admin/held/h1/decline': {
        body: { message: 'The payment was canceled and its $1 setup fee refunded.' },
      },
    });
    render(<HeldPayments />);
    fireEvent.click(within(await rowOf('ann@example.com')).getByRole('button', { name: 'Cancel and refund' }));
    let dialog = screen.getByRole('dialog', { name: 'Cancel and refund' });
    expect(dialog.querySelector('.confirm-dialog__text')?.textContent).toBe(
      'The subscription paid with the address ann@example.com on 20 Nov 2026, 14:05 UTC is canceled now, and the $1 ' +
        "setup fee is refunded to whoever paid. Nothing in the owner's account changes.",
    );
    fireEvent.click(within(dialog).getByRole('button', { name: 'Keep it waiting' }));
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(posted(fetchMock)).toEqual([]);

    fireEvent.click(within(await rowOf('ann@example.com')).getByRole('button', { name: 'Cancel and refund' }));
    dialog = screen.getByRole('dialog', { name: 'Cancel and refund' });
    fireEvent.click(within(dialog).getByRole('button', { name: 'Cancel and refund' }));
    const done = await screen.findByRole('status');
    expect(done.textContent).toBe('The payment was canceled and its $1 setup fee refunded.');
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(posted(fetchMock)).toEqual(['/api/admin/held/h1/decline']);
    expect(screen.queryByRole('table')).toBeNull();
    expect(screen.getByText(NONE_HELD)).toBeTruthy();
    // The row that had the focus is gone: the message has it.
    await waitFor(() => expect(document.activeElement).toBe(done));
  });

  it('says when a payment no longer waits, and keeps the dialog open when the cancel failed', async () => {
    let declineReply: { status: number; body: unknown } = {
      status: 500,
      body: { error: 'internal', message: 'boom' },
    };
    mockApi({
      'GET /api/admin/held': { body: { held: [ANN, BOB] } },
      'POST /api/admin/held/h1/decline': () => declineReply,
      'POST /api/admin/held/h2/remind': NOT_HELD,
    });
    render(<HeldPayments />);
    fireEvent.click(within(await rowOf('ann@example.com')).getByRole('button', { name: 'Cancel and refund' }));
    const dialog = screen.getByRole('dialog', { name: 'Cancel and refund' });
    expect(dialog.textContent).toContain('$1 setup fee is refunded to whoever paid');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Cancel and refund' }));
    await waitFor(() => expect(within(dialog).getByRole('alert').textContent).toBe(DECLINE_FAILED));

    declineReply = NOT_HELD;
    fireEvent.click(within(dialog).getByRole('button', { name: 'Cancel and refund' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(screen.getByRole('alert').textContent).toBe(NOT_HELD.body.message);
    expect(screen.queryByRole('row', { name: /ann@example.com/ })).toBeNull();

    fireEvent.click(within(await rowOf('bob@example.com')).getByRole('button', { name: 'Mail the owner again' }));
    await waitFor(() => expect(screen.queryByRole('row', { name: /bob@example.com/ })).toBeNull());
    expect(screen.getByRole('alert').textContent).toBe(NOT_HELD.body.message);
    expect(screen.getByText(NONE_HELD)).toBeTruthy();
  });

  it('says when no payment waits, and when the list cannot be read', async () => {
    mockApi({ 'GET /api/admin/held': { body: { held: [] } } });
    const { unmount } = render(<HeldPayments />);
    expect(await screen.findByText(NONE_HELD)).toBeTruthy();
    expect(screen.queryByRole('table')).toBeNull();
    unmount();

    mockApi({ 'GET /api/admin/held': { status: 500, body: { error: 'internal', message: 'boom' } } });
    render(<HeldPayments />);
    expect(await screen.findByText(HELD_UNREADABLE)).toBeTruthy();
    expect(screen.queryByRole('table')).toBeNull();
  });

  it('says which setup fee there is none of', async () => {
    mockApi({ 'GET /api/admin/held': { body: { held: [BOB] } } });
    render(<HeldPayments />);
    fireEvent.click(within(await rowOf('bob@example.com')).getByRole('button', { name: 'Cancel and refund' }));
    expect(screen.getByRole('dialog', { name: 'Cancel and refund' }).textContent).toContain(
      'is canceled now (no setup fee was paid).',
    );
  });
});
