import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { mockApi } from '../../test/fetch-mock';
import { DemoCheckoutPage } from './DemoCheckoutPage';

const CARD_NOTICE =
  'The free trial is once per card: a card that cannot be identified gets no free trial, and the first month is charged at once.';
const FEE_CHECKOUT = {
  sessionId: 'demo_1',
  status: 'open',
  email: 'ann@example.com',
  source: 'refundable_fee_funnel',
  refundableFee: true,
  todayCents: 100,
  trialDays: 7,
  monthlyCents: 2000,
  cancelUrl: '/?canceled=true',
  cardNotice: CARD_NOTICE,
};
const FREE_CHECKOUT = { ...FEE_CHECKOUT, source: 'direct_signup', refundableFee: false, todayCents: 0, email: null };
const FEE_TEXT = 'The $1 setup fee is refundable at any time (paid back in 5-7 business days).';

function renderCheckout(path = '/demo-checkout/demo_1') {
  const router = createMemoryRouter(
    [
      { path: '/demo-checkout/:id', element: <DemoCheckoutPage /> },
      { path: '/checkout-success', element: <h1>Success page</h1> },
      { path: '/', element: <h1>Home</h1> },
    ],
    { initialEntries: [path] },
  );
  render(<RouterProvider router={router} />);
  return router;
}

function bodyOf(fetchMock: ReturnType<typeof mockApi>, url: string) {
  const call = fetchMock.mock.calls.find(([input]) => input === url);
  return JSON.parse(String(call?.[1]?.body));
}

describe('DemoCheckoutPage', () => {
  it('shows the demo banner, the fee variant summary and a prefilled email', async () => {
    mockApi({ 'GET /api/demo-checkout/demo_1': { body: FEE_CHECKOUT } });
    renderCheckout();
    expect(screen.getByText('Loading your checkout...')).toBeTruthy();

    expect(await screen.findByRole('heading', { level: 1, name: 'Start your 7-day trial' })).toBeTruthy();
    expect(screen.getByRole('note').textContent).toBe('Demo checkout: no real card is charged');
    expect(screen.getByText('due today', { exact: false }).textContent).toBe('$1.00 due today');
    expect(screen.getByText('7-day trial, then $20.00/month')).toBeTruthy();
    expect(screen.getByText('Cancel anytime')).toBeTruthy();
    expect(screen.getByText(FEE_TEXT)).toBeTruthy();
    expect((screen.getByLabelText('Email') as HTMLInputElement).value).toBe('ann@example.com');
    expect(screen.getByText('Test card: 4242 4242 4242 4242')).toBeTruthy();
  });

  it('says by the pay button of a trial that a card it cannot identify gets no trial', async () => {
    mockApi({ 'GET /api/demo-checkout/demo_1': { body: FEE_CHECKOUT } });
    renderCheckout();
    const notice = await screen.findByText(CARD_NOTICE);
    const pay = screen.getByRole('button', { name: 'Pay $1.00 and start trial' });
    expect(notice.nextElementSibling).toBe(pay);
  });

  it('charges nothing today without the fee and leaves the email empty', async () => {
    mockApi({ 'GET /api/demo-checkout/demo_1': { body: FREE_CHECKOUT } });
    renderCheckout();
    await screen.findByRole('heading', { level: 1, name: 'Start your 7-day trial' });
    expect(screen.getByText('due today', { exact: false }).textContent).toBe('$0.00 due today');
    expect(screen.getByText('7-day free trial, then $20.00/month')).toBeTruthy();
    expect(screen.getByText(/^First \$20\.00 charge on .+\. Cancel before then and you pay nothing more\.$/)).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Start free trial' })).toBeTruthy();
    expect(screen.queryByText(FEE_TEXT)).toBeNull();
    expect((screen.getByLabelText('Email') as HTMLInputElement).value).toBe('');
  });

  it('charges the first month today for an account that had its trial', async () => {
    mockApi({
      'GET /api/demo-checkout/demo_1': {
        body: { ...FEE_CHECKOUT, refundableFee: false, todayCents: 2000, trialDays: 0, cardNotice: null },
      },
    });
    renderCheckout();
    await screen.findByRole('heading', { level: 1, name: 'Start your subscription' });
    expect(screen.getByText('due today', { exact: false }).textContent).toBe('$20.00 due today');
    expect(screen.getByText('$20.00/month, starting today')).toBeTruthy();
    expect(screen.getByText('This account has had its free trial, so the first month is charged now.')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Pay $20.00 and subscribe' })).toBeTruthy();
    expect(screen.queryByText(/trial, then/)).toBeNull();
    expect(screen.queryByText(FEE_TEXT)).toBeNull();
    expect(screen.queryByText(CARD_NOTICE)).toBeNull();
  });

  it('formats the card number in groups of four for a numeric keypad', async () => {
    mockApi({ 'GET /api/demo-checkout/demo_1': { body: FEE_CHECKOUT } });
    renderCheckout();
    const card = (await screen.findByLabelText('Card number')) as HTMLInputElement;
    expect(card.inputMode).toBe('numeric');
    expect(card.autocomplete).toBe('cc-number');
    fireEvent.change(card, { target: { value: '42424242x42424242' } });
    expect(card.value).toBe('4242 4242 4242 4242');
  });

  it('is busy while paying, sends the digits and follows the redirect', async () => {
    let answer: (reply: { body: unknown }) => void = () => {};
    const fetchMock = mockApi({
      'GET /api/demo-checkout/demo_1': { body: FREE_CHECKOUT },
      'POST /api/demo-checkout/demo_1/complete': () => new Promise((resolve) => (answer = resolve)),
    });
    const router = renderCheckout();
    fireEvent.change(await screen.findByLabelText('Email'), { target: { value: ' bob@example.com ' } });
    fireEvent.change(screen.getByLabelText('Card number'), { target: { value: '4242424242424242' } });
    fireEvent.click(screen.getByRole('button', { name: 'Start free trial' }));

    const busy = (await screen.findByRole('button', { name: 'Processing...' })) as HTMLButtonElement;
    expect(busy.disabled).toBe(true);
    expect((screen.getByRole('button', { name: 'Cancel' }) as HTMLButtonElement).disabled).toBe(true);
    expect(bodyOf(fetchMock, '/api/demo-checkout/demo_1/complete')).toEqual({
      email: 'bob@example.com',
      cardNumber: '4242424242424242',
    });

    answer({ body: { redirect: '/checkout-success?session_id=cs_demo_1&session=s1' } });
    await waitFor(() => expect(router.state.location.pathname).toBe('/checkout-success'));
    expect(router.state.location.search).toBe('?session_id=cs_demo_1&session=s1');
  });

  it('shows a declined card in an alert and lets the person try again', async () => {
    const declined = 'Your card was declined. Use the test card 4242 4242 4242 4242.';
    mockApi({
      'GET /api/demo-checkout/demo_1': { body: FEE_CHECKOUT },
      'POST /api/demo-checkout/demo_1/complete': {
        status: 402,
        body: { error: 'card_declined', message: declined },
      },
    });
    renderCheckout();
    fireEvent.change(await screen.findByLabelText('Card number'), { target: { value: '4000000000000002' } });
    fireEvent.click(screen.getByRole('button', { name: 'Pay $1.00 and start trial' }));
    expect((await screen.findByRole('alert')).textContent).toBe(declined);
    expect((screen.getByRole('button', { name: 'Pay $1.00 and start trial' }) as HTMLButtonElement).disabled).toBe(false);
  });

  it('cancels to the cancel URL', async () => {
    const fetchMock = mockApi({
      'GET /api/demo-checkout/demo_1': { body: FEE_CHECKOUT },
      'POST /api/demo-checkout/demo_1/cancel': { body: { redirect: '/?canceled=true' } },
    });
    const router = renderCheckout();
    fireEvent.click(await screen.findByRole('button', { name: 'Cancel' }));
    await waitFor(() => expect(router.state.location.pathname).toBe('/'));
    expect(router.state.location.search).toBe('?canceled=true');
    expect(fetchMock.mock.calls.some(([url]) => url === '/api/demo-checkout/demo_1/cancel')).toBe(true);
  });

  it('says when a checkout does not exist, with a way home', async () => {
    mockApi();
    renderCheckout('/demo-checkout/nope');
    expect(await screen.findByText('This checkout does not exist or has expired.')).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Return to Home' }).getAttribute('href')).toBe('/');
  });

  it('says when a checkout is already complete or canceled', async () => {
    mockApi({ 'GET /api/demo-checkout/done': { body: { ...FEE_CHECKOUT, status: 'complete' } } });
    renderCheckout('/demo-checkout/done');
    expect(await screen.findByRole('heading', { level: 1, name: 'Checkout complete' })).toBeTruthy();
    expect(screen.getByRole('link', { name: 'Go to your account' }).getAttribute('href')).toBe('/');
    expect(screen.queryByRole('button', { name: 'Pay $1.00 and start trial' })).toBeNull();
  });

  it('says when a checkout was canceled', async () => {
    mockApi({ 'GET /api/demo-checkout/gone': { body: { ...FEE_CHECKOUT, status: 'canceled' } } });
    renderCheckout('/demo-checkout/gone');
    expect(await screen.findByRole('heading', { level: 1, name: 'Checkout canceled' })).toBeTruthy();
    expect(screen.getByText('This checkout was canceled. Nothing was charged.')).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Pay $1.00 and start trial' })).toBeNull();
  });

  it('offers to try again when the checkout could not be loaded', async () => {
    let reply: { status: number; body: unknown } = {
      status: 500,
      body: { error: 'internal', message: 'Something broke' },
    };
    mockApi({ 'GET /api/demo-checkout/demo_1': () => reply });
    renderCheckout();
    expect((await screen.findByRole('alert')).textContent).toBe('We could not load this checkout: Something broke');
    reply = { status: 200, body: FEE_CHECKOUT };
    fireEvent.click(screen.getByRole('button', { name: 'Try again' }));
    expect(await screen.findByRole('heading', { level: 1, name: 'Start your 7-day trial' })).toBeTruthy();
  });
});
