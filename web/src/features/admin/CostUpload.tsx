import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { Button } from '../../components/Button';
import { ApiError } from '../../lib/api';
import { formatCents } from './format';
import { MAX_COSTS_BYTES, operationsApi, type CostsLoaded } from './operations-api';
import { countOf, formatDay } from './operations-format';
import './operations.css';

export const NO_FILE = 'Choose the CSV file downloaded from Google Ads first.';
export const TOO_LARGE = 'The file is larger than 5 MB. Download a shorter range of days and upload each part.';
export const UPLOAD_FAILED = 'The file could not be uploaded. Please try again.';
export const NOTHING_LOADED = 'No costs loaded yet.';

/** "Costs loaded for 1 Nov 2026 – 30 Nov 2026, 3 campaigns, $1,234.56." and the days missing. */
export function loadedText(loaded: CostsLoaded): string {
  if (loaded.from === null || loaded.to === null) return NOTHING_LOADED;
  const span = Math.round((Date.parse(`${loaded.to}T00:00:00Z`) - Date.parse(`${loaded.from}T00:00:00Z`)) / 86_400_000) + 1;
  // A day without a cost between two with one is worth a word: a report may be missing.
  const gaps = Number.isFinite(span) && loaded.days < span ? ` (${countOf(loaded.days, 'day')} of ${span})` : '';
  return (
    `Costs loaded for ${formatDay(loaded.from)} – ${formatDay(loaded.to)}${gaps}, ` +
    `${countOf(loaded.campaigns, 'campaign')}, ${formatCents(loaded.cost_cents)}.`
  );
}

function uploadError(cause: unknown): string {
  if (cause instanceof ApiError) {
    if (cause.status === 413) return TOO_LARGE;
    // The server's own answers (a bad file names its row and column) as it says them.
    if (cause.status >= 400 && cause.status < 500 && cause.code !== 'http_error') return cause.message;
  }
  return UPLOAD_FAILED;
}

/**
 * The ads' costs: a Google Ads campaign report (CSV) uploaded here is kept per day and campaign,
 * and the dashboard's rows show cost, CAC, ROAS and profit beside the revenue. `onLoaded` is
 * called after an upload was stored, so the page reads its figures again.
 */
export function CostUpload({ onLoaded }: { onLoaded: () => void }) {
  const fileId = useId();
  const hintId = useId();
  const formRef = useRef<HTMLFormElement>(null);
  const [file, setFile] = useState<File | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  /** What is loaded: undefined while it is read, null when it could not be read. */
  const [loaded, setLoaded] = useState<CostsLoaded | null | undefined>(undefined);
  /** Bumped after an upload: what is loaded is read again. */
  const [version, setVersion] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    operationsApi
      .costs(controller.signal)
      .then((answer) => setLoaded(answer))
      .catch(() => {
        if (!controller.signal.aborted) setLoaded(null);
      });
    return () => controller.abort();
  }, [version]);

  async function upload(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    if (!file) {
      setResult({ ok: false, text: NO_FILE });
      return;
    }
    if (file.size > MAX_COSTS_BYTES) {
      setResult({ ok: false, text: TOO_LARGE });
      return;
    }
    setBusy(true);
    setResult(null);
    try {
      const answer = await operationsApi.uploadCosts(file);
      setResult({ ok: true, text: answer.message });
      setFile(null);
      formRef.current?.reset();
      setVersion((current) => current + 1);
      onLoaded();
    } catch (cause) {
      setResult({ ok: false, text: uploadError(cause) });
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="card admin-section ops-section" aria-labelledby="admin-costs-title">
      <h2 id="admin-costs-title" className="admin-section__title">
        Ad costs
      </h2>
      <p className="admin-section__note" id={hintId}>
        Upload the Campaign report downloaded from Google Ads as a CSV file, with the Day segment and the columns
        Campaign ID, Clicks, Cost and Currency code (costs in US dollars). A keyword report with the same columns gives
        each keyword its cost too. An upload replaces the costs of the days it covers, so a corrected report can be
        uploaded again.
      </p>
      <p className="ops-loaded">
        {loaded === undefined
          ? 'Reading the costs loaded...'
          : loaded === null
            ? 'The costs loaded could not be read.'
            : loadedText(loaded)}
      </p>
      <form ref={formRef} className="admin-filters ops-form" onSubmit={(event) => void upload(event)} noValidate>
        <div className="admin-field ops-form__field">
          <label className="admin-field__label" htmlFor={fileId}>
            Campaign report (CSV)
          </label>
          <input
            id={fileId}
            type="file"
            accept=".csv,text/csv"
            className="admin-field__control ops-file"
            aria-describedby={hintId}
            disabled={busy}
            onChange={(event) => {
              setFile(event.target.files?.[0] ?? null);
              setResult(null);
            }}
          />
        </div>
        <Button type="submit" disabled={busy} aria-busy={busy}>
          {busy ? 'Uploading...' : 'Upload costs'}
        </Button>
      </form>
      {result &&
        (result.ok ? (
          <p className="ops-done" role="status">
            {result.text}
          </p>
        ) : (
          <p className="form__error ops-message" role="alert">
            {result.text}
          </p>
        ))}
    </section>
  );
}
