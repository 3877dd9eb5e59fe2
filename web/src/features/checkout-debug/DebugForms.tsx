import { useId, useState, type FormEvent, type ReactNode, type RefObject } from 'react';
import { Button } from '../../components/Button';
import { Field } from '../../components/Field';
import { useSession } from '../../lib/session';
import { authApi } from '../../lib/auth';
import { checkoutDebugApi, type DebugCheckout, type SimulatedEvent } from './api';
import {
  CREATE_EMAIL_REQUIRED,
  CREATE_FAILED,
  LOGIN_BOTH_REQUIRED,
  LOGIN_FAILED,
  RESET_EMAIL_REQUIRED,
  RESET_FAILED,
  SIMULATE_EMAIL_REQUIRED,
  SIMULATE_FAILED,
  SIMULATE_SESSION_REQUIRED,
  failureText,
} from './messages';

/** The spec's debug reloads: 1.5 s after an account change, 2 s after a webhook simulation. */
export const DEBUG_RELOAD_DELAY_MS = 1500;
export const SIMULATION_RELOAD_DELAY_MS = 2000;

type Note = { ok: boolean; content: ReactNode };

function NoteView({ note }: { note: Note | null }) {
  if (!note) return null;
  return (
    <div className={note.ok ? 'form__success' : 'form__error'} role={note.ok ? 'status' : 'alert'}>
      {note.content}
    </div>
  );
}

/** One action: a titled card with its own form, its outcome and a submit button. */
function ActionCard({
  title,
  lead,
  busy,
  note,
  submitLabel,
  busyLabel,
  onSubmit,
  children,
}: {
  title: string;
  lead: string;
  busy: boolean;
  note: Note | null;
  submitLabel: string;
  busyLabel: string;
  onSubmit: () => void;
  children: ReactNode;
}) {
  const titleId = useId();
  function handleSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (!busy) onSubmit();
  }
  return (
    <section className="debug-action" aria-labelledby={titleId}>
      <h3 id={titleId} className="debug-action__title">
        {title}
      </h3>
      <p className="debug-action__lead">{lead}</p>
      <form className="form" onSubmit={handleSubmit} aria-labelledby={titleId} aria-busy={busy} noValidate>
        {children}
        <NoteView note={note} />
        <Button type="submit" className="form__submit" disabled={busy}>
          {busy ? busyLabel : submitLabel}
        </Button>
      </form>
    </section>
  );
}

function EmailField({
  id,
  value,
  onChange,
  inputRef,
}: {
  id: string;
  value: string;
  onChange: (value: string) => void;
  inputRef?: RefObject<HTMLInputElement | null>;
}) {
  return (
    <Field
      ref={inputRef}
      id={id}
      label="Email"
      type="email"
      autoComplete="off"
      spellCheck={false}
      value={value}
      onChange={(event) => onChange(event.target.value)}
    />
  );
}

/** Signs in through the normal sign-in call, as any account (a test buyer, say). */
export function ManualLoginForm() {
  const { signedIn } = useSession();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<Note | null>(null);

  async function submit() {
    const credentials = { email: email.trim(), password };
    if (credentials.email === '' || password === '') return setNote({ ok: false, content: LOGIN_BOTH_REQUIRED });
    setBusy(true);
    setNote(null);
    try {
      const { user } = await authApi.login(credentials);
      signedIn(user);
      setPassword('');
      setNote({ ok: true, content: `Signed in as ${user.email}.` });
    } catch (cause) {
      setNote({ ok: false, content: failureText(LOGIN_FAILED, cause) });
    } finally {
      setBusy(false);
    }
  }

  return (
    <ActionCard
      title="Manual login"
      lead="Sign in as any account with its email and password."
      busy={busy}
      note={note}
      submitLabel="Log in"
      busyLabel="Logging in..."
      onSubmit={() => void submit()}
    >
      <EmailField id="debug-login-email" value={email} onChange={setEmail} />
      <Field
        id="debug-login-password"
        label="Password"
        type="password"
        autoComplete="off"
        value={password}
        onChange={(event) => setPassword(event.target.value)}
      />
    </ActionCard>
  );
}

export function CreateAccountForm({ onChanged }: { onChanged: (delayMs: number) => void }) {
  const [email, setEmail] = useState('');
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<Note | null>(null);

  async function submit() {
    if (email.trim() === '') return setNote({ ok: false, content: CREATE_EMAIL_REQUIRED });
    setBusy(true);
    setNote(null);
    try {
      const answer = await checkoutDebugApi.createAccount(email.trim());
      if (answer.created) {
        setNote({
          ok: true,
          content: (
            <>
              <p className="debug-action__result">{answer.message}</p>
              <p className="debug-action__result">
                User ID: <code>{answer.userId}</code>
              </p>
            </>
          ),
        });
        onChanged(DEBUG_RELOAD_DELAY_MS);
      } else {
        // The email already had an account: nothing was created, a reset mail went out instead.
        setNote({ ok: false, content: failureText(CREATE_FAILED, answer.message) });
      }
    } catch (cause) {
      setNote({ ok: false, content: failureText(CREATE_FAILED, cause) });
    } finally {
      setBusy(false);
    }
  }

  return (
    <ActionCard
      title="Create account"
      lead="Creates an account without a password and mails it a link to choose one. An email that already has an account gets a password reset mail instead."
      busy={busy}
      note={note}
      submitLabel="Create account"
      busyLabel="Creating..."
      onSubmit={() => void submit()}
    >
      <EmailField id="debug-create-email" value={email} onChange={setEmail} />
    </ActionCard>
  );
}

export function SendResetForm() {
  const [email, setEmail] = useState('');
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<Note | null>(null);

  async function submit() {
    if (email.trim() === '') return setNote({ ok: false, content: RESET_EMAIL_REQUIRED });
    setBusy(true);
    setNote(null);
    try {
      const { message } = await checkoutDebugApi.sendReset(email.trim());
      setNote({ ok: true, content: message });
    } catch (cause) {
      setNote({ ok: false, content: failureText(RESET_FAILED, cause) });
    } finally {
      setBusy(false);
    }
  }

  return (
    <ActionCard
      title="Send password reset"
      lead="Mails a password reset link to an existing account."
      busy={busy}
      note={note}
      submitLabel="Send reset"
      busyLabel="Sending..."
      onSubmit={() => void submit()}
    >
      <EmailField id="debug-reset-email" value={email} onChange={setEmail} />
    </ActionCard>
  );
}

/** What the simulation form holds; `picked` is the checkout chosen in the table, if any. */
export type SimulationDraft = { paymentSessionId: string; email: string; picked: DebugCheckout | null };

export const EMPTY_SIMULATION: SimulationDraft = { paymentSessionId: '', email: '', picked: null };

function SimulationResult({ result }: { result: SimulatedEvent }) {
  return (
    <>
      <p className="debug-action__result">Webhook simulated.</p>
      <dl className="debug-action__facts">
        <dt>Event ID</dt>
        <dd>
          <code>{result.eventId}</code>
        </dd>
        <dt>Outcome</dt>
        <dd>{result.outcome}</dd>
      </dl>
    </>
  );
}

export function SimulateWebhookForm({
  draft,
  onDraftChange,
  emailRef,
  onChanged,
}: {
  draft: SimulationDraft;
  onDraftChange: (draft: SimulationDraft) => void;
  emailRef: RefObject<HTMLInputElement | null>;
  onChanged: (delayMs: number) => void;
}) {
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<Note | null>(null);
  const paymentSessionId = draft.paymentSessionId.trim();
  // The picked checkout's own session id goes along only while its payment session id is unchanged.
  const picked = draft.picked && draft.picked.paymentSessionId === paymentSessionId ? draft.picked : null;
  const pickedHint = picked && `Picked from the table${picked.sessionId ? `, with session ${picked.sessionId}` : ''}.`;

  async function submit() {
    const email = draft.email.trim();
    if (paymentSessionId === '') return setNote({ ok: false, content: SIMULATE_SESSION_REQUIRED });
    if (email === '') return setNote({ ok: false, content: SIMULATE_EMAIL_REQUIRED });
    setBusy(true);
    setNote(null);
    try {
      const result = await checkoutDebugApi.simulateWebhook({
        type: 'checkout.session.completed',
        ...(picked?.sessionId ? { sessionId: picked.sessionId } : {}),
        paymentSessionId,
        email,
      });
      setNote({ ok: true, content: <SimulationResult result={result} /> });
      onChanged(SIMULATION_RELOAD_DELAY_MS);
    } catch (cause) {
      setNote({ ok: false, content: failureText(SIMULATE_FAILED, cause) });
    } finally {
      setBusy(false);
    }
  }

  return (
    <ActionCard
      title="Simulate webhook"
      lead="Sends checkout.session.completed for a checkout, as the payment provider would. Pick a checkout with Use in the table above, or type its paymentSessionId."
      busy={busy}
      note={note}
      submitLabel="Simulate webhook"
      busyLabel="Simulating..."
      onSubmit={() => void submit()}
    >
      <Field
        id="debug-simulate-payment-session"
        label="paymentSessionId"
        hint={pickedHint}
        type="text"
        autoComplete="off"
        autoCapitalize="off"
        spellCheck={false}
        value={draft.paymentSessionId}
        onChange={(event) => onDraftChange({ ...draft, paymentSessionId: event.target.value })}
      />
      <EmailField
        id="debug-simulate-email"
        value={draft.email}
        inputRef={emailRef}
        onChange={(email) => onDraftChange({ ...draft, email })}
      />
    </ActionCard>
  );
}
