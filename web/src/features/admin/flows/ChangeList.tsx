import { wordDiff, type DiffPart } from './word-diff';

export type ShownChange = { field: string; label: string; before: string | null; after: string };

/** One side of a change: the words the other side lacks are marked (and said, for a screen reader). */
function Side({ parts, side }: { parts: DiffPart[]; side: 'before' | 'after' }) {
  const hidden = side === 'before' ? 'added' : 'removed';
  return (
    <p className="flows-change__text">
      {parts
        .filter((part) => part.change !== hidden)
        .map((part, index) => {
          if (part.change === 'same') return <span key={index}>{part.text}</span>;
          const Mark = part.change === 'removed' ? 'del' : 'ins';
          return (
            <Mark key={index} className={`flows-${part.change}`}>
              <span className="admin-sr-only">[{part.change}: </span>
              {part.text}
              <span className="admin-sr-only">]</span>
            </Mark>
          );
        })}
    </p>
  );
}

/**
 * Changes field by field: each field's text before and after, the words taken out and put in
 * marked. `beforeLabel` names the side before ("Version 3").
 */
export function ChangeList({
  changes,
  beforeLabel,
  afterLabel,
  headingLevel = 3,
}: {
  changes: ShownChange[];
  beforeLabel: string;
  afterLabel: string;
  headingLevel?: 3 | 4;
}) {
  const Heading = headingLevel === 3 ? 'h3' : 'h4';
  return (
    <ol className="flows-changes">
      {changes.map((change) => {
        const parts = wordDiff(change.before ?? '', change.after);
        return (
          <li key={change.field} className="flows-change" data-field={change.field}>
            <Heading className="flows-change__field">{change.label}</Heading>
            <div className="flows-change__sides">
              <div className="flows-change__side">
                <p className="flows-change__label">{beforeLabel}</p>
                {change.before === null ? (
                  <p className="flows-change__text admin-none">Nothing: a new field.</p>
                ) : (
                  <Side parts={parts} side="before" />
                )}
              </div>
              <div className="flows-change__side">
                <p className="flows-change__label">{afterLabel}</p>
                <Side parts={parts} side="after" />
              </div>
            </div>
          </li>
        );
      })}
    </ol>
  );
}
