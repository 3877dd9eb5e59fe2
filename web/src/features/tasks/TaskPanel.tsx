import { useEffect, useId, useRef, useState } from 'react';
import { Button } from '../../components/Button';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { tasksApi, type Task } from './api';
import { TaskCard } from './TaskCard';
import { TaskForm } from './TaskForm';
import { EMPTY_TEXT, failureText } from './task-form';
import './tasks.css';

type Load = { status: 'loading' } | { status: 'failed'; message: string } | { status: 'loaded' };

type TaskPanelProps = {
  onAskForHelp: (task: Task) => void;
  helpDisabled?: boolean;
};

/** The member's task list ('Task List' on the members page), kept as the server answers it. */
export function TaskPanel({ onAskForHelp, helpDisabled = false }: TaskPanelProps) {
  const headingId = useId();
  const [load, setLoad] = useState<Load>({ status: 'loading' });
  const [attempt, setAttempt] = useState(0);
  const [tasks, setTasks] = useState<Task[]>([]);
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  const [formOpen, setFormOpen] = useState(false);
  const [confirming, setConfirming] = useState<Task | null>(null);
  const [deleting, setDeleting] = useState(false);
  const [deleteError, setDeleteError] = useState<string | null>(null);
  // The form and the confirmation take their buttons away; focus goes to the create button after
  // React has put it (back) on the page, not before.
  const [focusCreate, setFocusCreate] = useState(false);
  const createRef = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    const controller = new AbortController();
    setLoad({ status: 'loading' });
    tasksApi
      .list(controller.signal)
      .then((list) => {
        setTasks(list);
        setLoad({ status: 'loaded' });
      })
      .catch((cause: unknown) => {
        if (!controller.signal.aborted) setLoad({ status: 'failed', message: failureText(cause) });
      });
    return () => controller.abort();
  }, [attempt]);

  useEffect(() => {
    if (!focusCreate) return;
    createRef.current?.focus();
    setFocusCreate(false);
  }, [focusCreate]);

  function replaceTask(task: Task) {
    setTasks((current) => current.map((existing) => (existing.id === task.id ? task : existing)));
  }

  function toggle(taskId: string) {
    setExpanded((current) => {
      const next = new Set(current);
      if (!next.delete(taskId)) next.add(taskId);
      return next;
    });
  }

  function closeForm() {
    setFormOpen(false);
    setFocusCreate(true);
  }

  function askToDelete(task: Task) {
    setDeleteError(null);
    setConfirming(task);
  }

  async function confirmDelete(task: Task) {
    setDeleting(true);
    setDeleteError(null);
    try {
      await tasksApi.remove(task.id);
      setTasks((current) => current.filter((existing) => existing.id !== task.id));
      setConfirming(null);
      setFocusCreate(true);
    } catch (cause) {
      setDeleteError(failureText(cause));
    } finally {
      setDeleting(false);
    }
  }

  return (
    <section className="card tasks-panel" aria-labelledby={headingId}>
      <h2 id={headingId} className="tasks-heading">
        Your Tasks
      </h2>

      {load.status === 'loading' && (
        <p className="tasks-status" role="status">
          Loading your tasks…
        </p>
      )}

      {load.status === 'failed' && (
        <div className="tasks-status" role="alert">
          <p>Sorry, we couldn't load your tasks. {load.message}</p>
          <Button variant="secondary" onClick={() => setAttempt((count) => count + 1)}>
            Try again
          </Button>
        </div>
      )}

      {load.status === 'loaded' && (
        <>
          {formOpen ? (
            <TaskForm
              onSaved={(task) => {
                setTasks((current) => [task, ...current]);
                closeForm();
              }}
              onCancel={closeForm}
            />
          ) : (
            <button
              ref={createRef}
              type="button"
              className="btn btn--primary tasks-create"
              onClick={() => setFormOpen(true)}
            >
              + Create New Task
            </button>
          )}

          {tasks.length === 0 ? (
            !formOpen && <p className="tasks-empty">{EMPTY_TEXT}</p>
          ) : (
            <ul className="tasks-list" aria-labelledby={headingId}>
              {tasks.map((task) => (
                <TaskCard
                  key={task.id}
                  task={task}
                  expanded={expanded.has(task.id)}
                  onToggle={() => toggle(task.id)}
                  onChange={replaceTask}
                  onDelete={() => askToDelete(task)}
                  onAskForHelp={() => onAskForHelp(task)}
                  helpDisabled={helpDisabled}
                />
              ))}
            </ul>
          )}
        </>
      )}

      {confirming && (
        <ConfirmDialog
          title="Delete task"
          error={deleteError}
          busy={deleting}
          onConfirm={() => void confirmDelete(confirming)}
          onCancel={() => setConfirming(null)}
        >
          Are you sure you want to delete "{confirming.name}"?
        </ConfirmDialog>
      )}
    </section>
  );
}
