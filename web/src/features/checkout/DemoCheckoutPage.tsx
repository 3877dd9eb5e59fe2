import { useEffect, useLayoutEffect, useRef, useState, type ChangeEvent, type FormEvent, type ReactNode } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { Button } from '../../components/Button';
import { Field } from '../../components/Field';
import { usePublicConfig } from '../../lib/public-config';
import { ApiError } from '../../lib/api';
import { checkoutApi, type DemoCheckout } from './api';
import { applyCardEdit, cardDigits, formatDollars, formatFee, type CardEdit } from './format';

const TEST_CARD = '4242 4242 4242 4242';

type Load =
  | { state: 'loading' }
  | { state: 'not-found' }
  | { state: 'failed'; message: string }
  | { state: 'ready'; checkout: DemoCheckout };

function errorText(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

/** The server answers same-origin paths; anything else is left to the browser. */
function useFollowRedirect() {
  const navigate = useNavigate();
  return (redirect: string) => {
    if (redirect.startsWith('/') && !redirect.startsWith('//')) navigate(redirect, { replace: true });
    else window.location.assign(redirect);
  };
}

function DemoBanner() {
  return (
    <p className="demo-banner" role="note">
      <strong>Demo checkout:</strong> no real card is charged
    </p>
  );
}

/** The day the first monthly charge falls on: the end of the trial, counted from today. */
function firstChargeDate(trialDays: number, now: Date = new Date()): string {
  const day = new Date(now.getTime() + trialDays * 24 * 60 * 60 * 1000);
  return day.toLocaleDateString('en-US', { month: 'long', day: 'numeric', year: 'numeric' });
}

function OrderSummary({ checkout }: { checkout: DemoCheckout }) {
  const { productName } = usePublicConfig();
  return (
    <section className="order-summary" aria-labelledby="order-summary-title">
      <h2 id="order-summary-title" className="order-summary__title">
        Order summary
      </h2>
      <p className="order-summary__product">{productName} subscription</p>
      <p className="order-summary__today">
        <span className="order-summary__price">{formatDollars(checkout.todayCents)}</span> due today
      </p>
      <ul className="order-summary__terms">
        {checkout.trialDays === 0 ? (
          <>
            <li>{formatDollars(checkout.monthlyCents)}/month, starting today</li>
            <li>This account has had its free trial, so the first month is charged now.</li>
          </>
        ) : (
          <>
            <li>
              {checkout.trialDays}-day {checkout.todayCents === 0 ? 'free ' : ''}trial, then{' '}
              {formatDollars(checkout.monthlyCents)}/month
            </li>
            <li>
              First {formatDollars(checkout.monthlyCents)} charge on {firstChargeDate(checkout.trialDays)}. Cancel before
              then and you pay nothing more.
            </li>
          </>
        )}
        <li>Cancel anytime</li>
        {checkout.refundableFee && (
          <li>
            The {formatFee(checkout.todayCents)} setup fee is refundable at any time (paid back in 5-7 business days).
          </li>
        )}
      </ul>
    </section>
  );
}

function PaymentForm({ id, checkout }: { id: string; checkout: DemoCheckout }) {
  const followRedirect = useFollowRedirect();
  const [email, setEmail] = useState(checkout.email ?? '');
  const [card, setCard] = useState<CardEdit>({ value: '', caret: 0 });
  const [busy, setBusy] = useState<'paying' | 'canceling' | null>(null);
  const [error, setError] = useState<string | null>(null);
  const cardRef = useRef<HTMLInputElement>(null);

  // Re-formatting moves the caret to the end; put it back where the person was typing.
  useLayoutEffect(() => {
    const input = cardRef.current;
    if (input && document.activeElement === input) input.setSelectionRange(card.caret, card.caret);
  }, [card]);

  function handleCardChange(event: ChangeEvent<HTMLInputElement>) {
    const input = event.target;
    const inputType = (event.nativeEvent as Partial<InputEvent>).inputType;
    setCard(applyCardEdit(card.value, input.value, input.selectionStart ?? input.value.length, inputType));
  }

  async function handleSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    setBusy('paying');
    setError(null);
    try {
      const { redirect } = await checkoutApi.completeDemoCheckout(id, {
        email: email.trim(),
        cardNumber: cardDigits(card.value),
      });
      followRedirect(redirect);
    } catch (cause) {
      setError(errorText(cause));
      setBusy(null);
    }
  }

  async function handleCancel() {
    if (busy) return;
    setBusy('canceling');
    setError(null);
    try {
      const { redirect } = await checkoutApi.cancelDemoCheckout(id);
      followRedirect(redirect);
    } catch (cause) {
      setError(errorText(cause));
      setBusy(null);
    }
  }

  return (
    <form className="form checkout__form" onSubmit={handleSubmit} aria-busy={busy !== null} noValidate>
      <h2 className="checkout__form-title">Your details</h2>
      <Field
        id="checkout-email"
        label="Email"
        type="email"
        autoComplete="email"
        hint={checkout.email ? 'The email of your account.' : undefined}
        readOnly={Boolean(checkout.email)}
        value={email}
        onChange={(event) => setEmail(event.target.value)}
      />
      <Field
        ref={cardRef}
        id="checkout-card"
        label="Card number"
        hint={`Test card: ${TEST_CARD}`}
        type="text"
        inputMode="numeric"
        autoComplete="cc-number"
        placeholder="1234 1234 1234 1234"
        value={card.value}
        onChange={handleCardChange}
      />
      {error && (
        <p className="form__error" role="alert">
          {error}
        </p>
      )}
      {checkout.cardNotice && <p className="form__hint">{checkout.cardNotice}</p>}
      <Button type="submit" className="form__submit checkout__pay" disabled={busy !== null}>
        {busy === 'paying'
          ? 'Processing...'
          : checkout.trialDays === 0
            ? `Pay ${formatDollars(checkout.todayCents)} and subscribe`
            : checkout.todayCents === 0
              ? 'Start free trial'
              : `Pay ${formatDollars(checkout.todayCents)} and start trial`}
      </Button>
      <Button variant="secondary" className="form__submit" disabled={busy !== null} onClick={() => void handleCancel()}>
        {busy === 'canceling' ? 'Canceling...' : 'Cancel'}
      </Button>
    </form>
  );
}

function CheckoutNotice({ title, children }: { title: string; children: ReactNode }) {
  return (
    <section className="card checkout checkout--notice" aria-labelledby="checkout-title">
      <DemoBanner />
      <h1 id="checkout-title" className="page-title">
        {title}
      </h1>
      {children}
    </section>
  );
}

/** `/demo-checkout/:id`: the built-in stand-in for the payment provider's hosted checkout. */
export function DemoCheckoutPage() {
  const { id = '' } = useParams();
  const [load, setLoad] = useState<Load>({ state: 'loading' });
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    setLoad({ state: 'loading' });
    checkoutApi
      .demoCheckout(id, controller.signal)
      .then((checkout) => setLoad({ state: 'ready', checkout }))
      .catch((cause) => {
        if (controller.signal.aborted) return;
        if (cause instanceof ApiError && cause.code === 'not_found') setLoad({ state: 'not-found' });
        else setLoad({ state: 'failed', message: errorText(cause) });
      });
    return () => controller.abort();
  }, [id, attempt]);

  if (load.state === 'loading') {
    return (
      <CheckoutNotice title="Checkout">
        <p className="checkout__status" role="status">
          <span className="spinner" aria-hidden="true" /> Loading your checkout...
        </p>
      </CheckoutNotice>
    );
  }
  if (load.state === 'not-found') {
    return (
      <CheckoutNotice title="Checkout not found">
        <p className="checkout__text">This checkout does not exist or has expired.</p>
        <p>
          <Link to="/" className="btn btn--primary">
            Return to Home
          </Link>
        </p>
      </CheckoutNotice>
    );
  }
  if (load.state === 'failed') {
    return (
      <CheckoutNotice title="Checkout">
        <p className="form__error" role="alert">
          We could not load this checkout: {load.message}
        </p>
        <p className="checkout__actions">
          <Button onClick={() => setAttempt((count) => count + 1)}>Try again</Button>
          <Link to="/" className="btn btn--secondary">
            Return to Home
          </Link>
        </p>
      </CheckoutNotice>
    );
  }

  const { checkout } = load;
  if (checkout.status === 'complete') {
    return (
      <CheckoutNotice title="Checkout complete">
        <p className="checkout__text">This checkout is already complete. Your trial has started.</p>
        <p>
          <Link to="/" className="btn btn--primary">
            Go to your account
          </Link>
        </p>
      </CheckoutNotice>
    );
  }
  if (checkout.status === 'canceled') {
    return (
      <CheckoutNotice title="Checkout canceled">
        <p className="checkout__text">This checkout was canceled. Nothing was charged.</p>
        <p>
          <Link to="/" className="btn btn--primary">
            Return to Home
          </Link>
        </p>
      </CheckoutNotice>
    );
  }

  return (
    <section className="card checkout" aria-labelledby="checkout-title">
      <DemoBanner />
      <h1 id="checkout-title" className="page-title">
        {checkout.trialDays === 0 ? 'Start your subscription' : `Start your ${checkout.trialDays}-day trial`}
      </h1>
      <div className="checkout__columns">
        <OrderSummary checkout={checkout} />
        <PaymentForm id={id} checkout={checkout} />
      </div>
    </section>
  );
}
