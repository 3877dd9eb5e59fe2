import { useState, type FormEvent } from 'react';
import { Button } from '../../../components/Button';
import { countOf, formatMoment } from '../operations-format';
import { failureOf, flowsApi, type Flow } from './flows-api';
import { MessageLine, Section, type Message } from './parts';

export const NAME_RULE = 'A name is lower-case letters, digits and “-”, starting with a letter, at most 40 characters.';
export const CREATE_FAILED = 'The flow could not be created. Please try again.';

const NAME_PATTERN = /^[a-z][a-z0-9-]{0,39}$/;

/** A new flow: its name, and the published flow its first draft is copied from. */
function NewFlowForm({
  flows,
  onCreated,
  onCancel,
}: {
  flows: Flow[];
  onCreated: (name: string, copyFrom: string) => Promise<void>;
  onCancel: () => void;
}) {
  const published = flows.filter((flow) => flow.published !== null).map((flow) => flow.name);
  const [name, setName] = useState('');
  const [copyFrom, setCopyFrom] = useState(published[0] ?? '');
  const [problem, setProblem] = useState<string | null>(null);
  const [message, setMessage] = useState<Message | null>(null);
  const [busy, setBusy] = useState(false);

  async function create(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    const wanted = name.trim();
    setMessage(null);
    if (!NAME_PATTERN.test(wanted)) {
      setProblem(NAME_RULE);
      return;
    }
    if (flows.some((flow) => flow.name === wanted)) {
      setProblem(`There is already a flow named “${wanted}”.`);
      return;
    }
    setProblem(null);
    setBusy(true);
    try {
      await flowsApi.create(wanted, copyFrom);
      await onCreated(wanted, copyFrom);
    } catch (cause) {
      const failure = failureOf(cause);
      const atName = failure.problems.filter((each) => each.field === 'name').map((each) => each.message);
      if (atName.length > 0) setProblem(atName.join(' '));
      else if (failure.status === 422 || failure.status === 409) {
        setMessage({ ok: false, text: failure.message || CREATE_FAILED });
      } else setMessage({ ok: false, text: CREATE_FAILED });
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="flows-new" onSubmit={(event) => void create(event)} noValidate aria-label="New flow">
      <div className="admin-filters">
        <div className="admin-field">
          <label className="admin-field__label" htmlFor="flows-new-name">
            Name
          </label>
          <input
            id="flows-new-name"
            className="admin-field__control"
            value={name}
            autoComplete="off"
            spellCheck={false}
            onChange={(event) => setName(event.target.value)}
            aria-invalid={problem ? true : undefined}
            aria-describedby={problem ? 'flows-new-name-hint flows-new-name-problem' : 'flows-new-name-hint'}
          />
        </div>
        <label className="admin-field">
          <span className="admin-field__label">Copy from</span>
          <select className="admin-field__control" value={copyFrom} onChange={(event) => setCopyFrom(event.target.value)}>
            {published.map((each) => (
              <option key={each} value={each}>
                {each}
              </option>
            ))}
          </select>
        </label>
        <div className="flows-new__buttons">
          <Button type="submit" disabled={busy} aria-busy={busy}>
            {busy ? 'Creating...' : 'Create flow'}
          </Button>
          <Button variant="secondary" onClick={onCancel}>
            Cancel
          </Button>
        </div>
      </div>
      <p id="flows-new-name-hint" className="flows-hint">
        {NAME_RULE} Its first draft is a copy of the published version of the flow it is copied from.
      </p>
      {problem && (
        <p id="flows-new-name-problem" className="form__error flows-problem">
          {problem}
        </p>
      )}
      <MessageLine message={message} />
    </form>
  );
}

/**
 * The flows: each with its published version, its draft, and where the routing uses it; one is
 * chosen to edit. "New flow" starts one as a copy of another.
 */
export function FlowList({
  flows,
  chosen,
  onChoose,
  onCreated,
}: {
  flows: Flow[];
  chosen: string | null;
  onChoose: (name: string) => void;
  onCreated: (name: string, copyFrom: string) => Promise<void>;
}) {
  const [adding, setAdding] = useState(false);
  return (
    <Section
      id="flows-list-title"
      title="The flows"
      actions={
        !adding && (
          <Button variant="secondary" onClick={() => setAdding(true)}>
            New flow
          </Button>
        )
      }
    >
      {adding && (
        <NewFlowForm
          flows={flows}
          onCancel={() => setAdding(false)}
          onCreated={async (name, copyFrom) => {
            setAdding(false);
            await onCreated(name, copyFrom);
          }}
        />
      )}
      <div className="admin-table__frame">
        <div className="admin-table__scroll" role="region" aria-label="Flows table" tabIndex={0}>
          <table className="admin-table flows-list">
            <caption className="admin-table__caption">
              Each flow’s published version, its draft, and where the routing sends visitors to it
            </caption>
            <thead>
              <tr>
                <th scope="col">Flow</th>
                <th scope="col">Published</th>
                <th scope="col">Draft</th>
                <th scope="col">Routed by</th>
                <th scope="col">
                  <span className="admin-sr-only">Edit</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {flows.map((flow) => {
                const current = flow.name === chosen;
                return (
                  <tr key={flow.name} aria-current={current ? 'true' : undefined} data-testid={`flows-row-${flow.name}`}>
                    <th scope="row">
                      {flow.name}
                      {flow.usesKeyword && <span className="flows-tag">Uses {'{keyword}'}</span>}
                    </th>
                    <td>{flow.published === null ? <span className="admin-none">Not yet</span> : `Version ${flow.published}`}</td>
                    <td className="flows-wrap">
                      {flow.draft ? (
                        <>
                          Saved {formatMoment(flow.draft.updatedAt)}
                          {(flow.draft.problems ?? []).length > 0 && (
                            <span className="admin-rate flows-draft-problems">
                              {countOf(flow.draft.problems.length, 'problem')} to fix
                            </span>
                          )}
                        </>
                      ) : (
                        <span className="admin-none">None</span>
                      )}
                    </td>
                    <td className="flows-wrap">
                      {flow.routedBy.length === 0 ? (
                        <span className="admin-none">Not routed</span>
                      ) : (
                        flow.routedBy.join(', ')
                      )}
                    </td>
                    <td>
                      {current ? (
                        <span className="flows-tag flows-tag--current">Editing</span>
                      ) : (
                        <Button variant="secondary" className="flows-edit" onClick={() => onChoose(flow.name)}>
                          {'Edit '}
                          <span className="admin-sr-only">{flow.name}</span>
                        </Button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      </div>
    </Section>
  );
}
