import { useId, useState, type FormEvent } from 'react';
import { Button } from '../../components/Button';
import { tasksApi, type Task, type TaskItem } from './api';
import { ITEM_REQUIRED, checkItem, failureText } from './task-form';

type TaskCardProps = {
  task: Task;
  expanded: boolean;
  onToggle: () => void;
  /** The task as the server now holds it. */
  onChange: (task: Task) => void;
  onDelete: () => void;
  onAskForHelp: () => void;
  helpDisabled: boolean;
};

export function TaskCard({ task, expanded, onToggle, onChange, onDelete, onAskForHelp, helpDisabled }: TaskCardProps) {
  const bodyId = useId();
  const draftId = useId();
  const errorId = useId();
  const [draft, setDraft] = useState('');
  const [adding, setAdding] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // A tick shows at once; it stays until the server answers, which then decides.
  const [pendingTicks, setPendingTicks] = useState<ReadonlyMap<string, boolean>>(new Map());

  const doneCount = task.items.filter((item) => item.completed).length;

  function withoutTick(itemId: string) {
    setPendingTicks((current) => {
      const next = new Map(current);
      next.delete(itemId);
      return next;
    });
  }

  async function tick(item: TaskItem, completed: boolean) {
    if (pendingTicks.has(item.id)) return;
    setError(null);
    setPendingTicks((current) => new Map(current).set(item.id, completed));
    try {
      onChange(await tasksApi.setItemCompleted(task.id, item.id, completed));
    } catch (cause) {
      setError(failureText(cause));
    } finally {
      withoutTick(item.id);
    }
  }

  async function addItem(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (adding) return;
    const text = checkItem(draft);
    if (text === null) {
      setError(ITEM_REQUIRED);
      return;
    }
    setError(null);
    setAdding(true);
    try {
      onChange(await tasksApi.addItem(task.id, text));
      setDraft('');
    } catch (cause) {
      setError(failureText(cause));
    } finally {
      setAdding(false);
    }
  }

  return (
    <li className="tasks-card">
      <div className="tasks-card-header">
        <h3 className="tasks-card-title">
          <button
            type="button"
            className="tasks-card-toggle"
            aria-expanded={expanded}
            aria-controls={bodyId}
            onClick={onToggle}
          >
            <span className="tasks-card-chevron" aria-hidden="true" />
            <span className="tasks-card-name">{task.name}</span>
          </button>
        </h3>
        <p className="tasks-card-progress">
          {doneCount} of {task.items.length} done
        </p>
        <div className="tasks-card-actions">
          {/* Every task has these buttons; the task's name tells them apart when heard, not seen. */}
          <Button
            variant="secondary"
            disabled={helpDisabled}
            onClick={onAskForHelp}
            aria-label={`Get AI assistance with ${task.name}`}
          >
            Get AI assistance
          </Button>
          <Button variant="secondary" className="tasks-delete" onClick={onDelete} aria-label={`Delete ${task.name}`}>
            Delete
          </Button>
        </div>
      </div>

      <div id={bodyId} className="tasks-card-body" hidden={!expanded}>
        <ul className="tasks-items">
          {task.items.map((item) => {
            const completed = pendingTicks.get(item.id) ?? item.completed;
            return (
              <li key={item.id}>
                <label className={completed ? 'tasks-item tasks-item--done' : 'tasks-item'}>
                  <input
                    type="checkbox"
                    checked={completed}
                    aria-busy={pendingTicks.has(item.id) || undefined}
                    onChange={(event) => void tick(item, event.target.checked)}
                  />
                  <span className="tasks-item-text">{item.text}</span>
                </label>
              </li>
            );
          })}
        </ul>

        <form className="tasks-add" onSubmit={(event) => void addItem(event)} noValidate>
          <label htmlFor={draftId} className="tasks-sr-only">
            New item for {task.name}
          </label>
          <input
            id={draftId}
            className="tasks-add-input"
            value={draft}
            placeholder="Add new item..."
            onChange={(event) => setDraft(event.target.value)}
            aria-invalid={error === ITEM_REQUIRED || undefined}
            aria-describedby={error ? errorId : undefined}
            autoComplete="off"
          />
          <Button type="submit" variant="secondary" disabled={adding} aria-label={`Add item to ${task.name}`}>
            Add
          </Button>
        </form>

        {error && (
          <p id={errorId} className="form__error tasks-card-error" role="alert">
            {error}
          </p>
        )}
      </div>
    </li>
  );
}
