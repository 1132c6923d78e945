-- An audio_files row removed in any way (directly, or by a cascade from its visit or its
-- account) queues its stored object for deletion; services.audio.purgeDeleted() drains the
-- queue. A trigger catches the cascades that application code never sees.
create or replace function audio_files_queue_deletion() returns trigger language plpgsql as $$
begin
  insert into audio_deletions (store, storage_key) values (old.store, old.storage_key);
  return old;
end;
$$;
--> statement-breakpoint
drop trigger if exists audio_files_queue_deletion on audio_files;
--> statement-breakpoint
create trigger audio_files_queue_deletion after delete on audio_files
  for each row execute function audio_files_queue_deletion();
