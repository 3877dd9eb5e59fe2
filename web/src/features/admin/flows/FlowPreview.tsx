import { useId, useState } from 'react';
import { Button } from '../../../components/Button';
import { formatMoment } from '../operations-format';
import { DROPOFF_FUNNELS } from './dropoff-model';
import { failureOf, flowsApi, type FlowScript, type Preview, type PreviewFunnel, type Problem } from './flows-api';
import { MessageLine, Section, type Message } from './parts';

export const PREVIEW_TITLE = 'Preview of the draft';
export const PREVIEW_PROBLEMS = 'The preview could not start: the fields marked above have problems.';
export const PREVIEW_FAILED = 'The preview could not start. Please try again.';

/** Where each funnel's page is. */
const FUNNEL_PATHS: Record<PreviewFunnel, string> = { chat: '/chat-help', refundable: '/Chat-Help-2' };

/** The real funnel page, running the preview: `/chat-help?preview=<id>&keyword=<k>`. */
export function previewSrc(previewId: string, funnel: PreviewFunnel, keyword: string): string {
  const query = new URLSearchParams({ preview: previewId });
  if (keyword.trim()) query.set('keyword', keyword.trim());
  return `${FUNNEL_PATHS[funnel]}?${query.toString()}`;
}

type Device = 'desktop' | 'phone';
type Shown = Preview & { funnel: PreviewFunnel; keyword: string };

/**
 * "Try it": the editor's fields as they are now (saved or not) run in the real funnel page, in
 * a frame as wide as a desktop's or a phone's. The server marks the visitor as a preview: the
 * conversation is counted nowhere and its checkout charges nothing. "Start over" makes a new one.
 */
export function FlowPreview({
  name,
  usesKeyword,
  scriptNow,
  onProblems,
}: {
  name: string;
  usesKeyword: boolean;
  /** The script the fields hold, or their problems (numbers that are not numbers). */
  scriptNow: () => { script: FlowScript | null; problems: Problem[] };
  onProblems: (problems: Problem[]) => void;
}) {
  const ids = useId();
  const [funnel, setFunnel] = useState<PreviewFunnel>('chat');
  const [keyword, setKeyword] = useState('');
  const [device, setDevice] = useState<Device>('desktop');
  const [shown, setShown] = useState<Shown | null>(null);
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<Message | null>(null);

  async function start() {
    if (busy) return;
    const { script, problems } = scriptNow();
    if (!script) {
      onProblems(problems);
      setMessage({ ok: false, text: PREVIEW_PROBLEMS });
      return;
    }
    setBusy(true);
    setMessage(null);
    try {
      const preview = await flowsApi.preview(name, script);
      setShown({ ...preview, funnel, keyword: keyword.trim() });
    } catch (cause) {
      const failure = failureOf(cause);
      if (failure.status === 422 && failure.problems.length > 0) {
        onProblems(failure.problems);
        setMessage({ ok: false, text: PREVIEW_PROBLEMS });
      } else setMessage({ ok: false, text: PREVIEW_FAILED });
    } finally {
      setBusy(false);
    }
  }

  const action = shown ? 'Start over' : 'Try it';
  return (
    <Section id="flows-preview-title" title="Try it" className="flows-preview">
      <p className="admin-section__note admin-section__note--first">
        Runs the fields as they are now, saved or not, in the real chat. The conversation is counted nowhere, and its
        checkout charges nothing. After an edit, press Start over to try it.
      </p>
      <div className="admin-filters flows-preview__controls">
        <label className="admin-field">
          <span className="admin-field__label">Funnel</span>
          <select
            className="admin-field__control"
            value={funnel}
            onChange={(event) => setFunnel(event.target.value as PreviewFunnel)}
          >
            {Object.entries(DROPOFF_FUNNELS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <div className="admin-field">
          <label className="admin-field__label" htmlFor={`${ids}-keyword`}>
            Keyword (optional)
          </label>
          <input
            id={`${ids}-keyword`}
            className="admin-field__control"
            value={keyword}
            onChange={(event) => setKeyword(event.target.value)}
            aria-describedby={`${ids}-keyword-hint`}
          />
        </div>
        <Button onClick={() => void start()} disabled={busy} aria-busy={busy} className="flows-preview__start">
          {busy ? 'Starting...' : action}
        </Button>
      </div>
      <p id={`${ids}-keyword-hint`} className="flows-hint flows-preview__hint">
        {usesKeyword
          ? 'This flow uses {keyword}: give the ad’s keyword, as “printer offline help”.'
          : 'The ad’s keyword as the visitor’s address would carry it, as “printer offline help”.'}{' '}
        A change of funnel or keyword applies at {action}.
      </p>
      <div className="admin-presets flows-devices" role="group" aria-label="Frame">
        {(['desktop', 'phone'] as const).map((each) => (
          <button
            key={each}
            type="button"
            className="admin-preset"
            aria-pressed={device === each}
            onClick={() => setDevice(each)}
          >
            {each === 'desktop' ? 'Desktop' : 'Phone'}
          </button>
        ))}
      </div>
      <MessageLine message={message} testId="flows-preview-message" />
      {shown && (
        <>
          <p className="flows-hint" data-testid="flows-preview-note">
            {DROPOFF_FUNNELS[shown.funnel]}
            {shown.keyword ? `, keyword “${shown.keyword}”` : ''}. This preview works until{' '}
            {formatMoment(shown.expiresAt)}.
          </p>
          <div className={`flows-frame flows-frame--${device}`} data-testid="flows-preview-device" data-device={device}>
            <iframe
              key={shown.previewId}
              className="flows-frame__page"
              title={PREVIEW_TITLE}
              src={previewSrc(shown.previewId, shown.funnel, shown.keyword)}
            />
          </div>
        </>
      )}
    </Section>
  );
}
