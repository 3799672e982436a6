PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE episodes (
	id VARCHAR(64) NOT NULL, 
	task_id VARCHAR(200) NOT NULL, 
	scenario_id VARCHAR(200) NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	world_model VARCHAR(300) NOT NULL, 
	mode VARCHAR(16) NOT NULL, 
	faults JSON NOT NULL, 
	initial_state JSON NOT NULL, 
	state JSON NOT NULL, 
	step_count INTEGER NOT NULL, 
	final_answer TEXT, 
	tenant VARCHAR(200), 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	closed_at DATETIME, 
	PRIMARY KEY (id)
);
INSERT INTO episodes VALUES('ep-submitted','triage/chest-pain','triage_nurse','judged','scripted/triage','tracked','{"mode": "E3", "count": 2, "duration": 1, "seed": 7}','{"patients": [{"id": "P1", "priority": 3, "name": "Zo\u00eb"}], "queue": []}','{"patients": [{"id": "P1", "priority": 1, "name": "Zo\u00eb"}], "queue": []}',3,'P1 is priority 1','acme','2026-11-30 09:00:00.123456','2026-12-01 14:59:46.374347','2026-11-30 09:00:04.123456');
INSERT INTO episodes VALUES('ep-open','customs/declaration','customs_officer','open','','history','{"mode": "E0", "count": 2, "duration": 2, "seed": 0}','{}','{}',1,NULL,NULL,'2026-11-30 09:05:00.123456','2026-11-30 09:06:00.123456',NULL);
CREATE TABLE steps (
	id INTEGER NOT NULL, 
	episode_id VARCHAR(64) NOT NULL, 
	step_index INTEGER NOT NULL, 
	tool VARCHAR(200) NOT NULL, 
	arguments JSON NOT NULL, 
	observation JSON, 
	is_error BOOLEAN NOT NULL, 
	true_observation JSON, 
	fault JSON, 
	error TEXT, 
	state_patch JSON NOT NULL, 
	state_hash VARCHAR(64) NOT NULL, 
	prompt_tokens INTEGER NOT NULL, 
	completion_tokens INTEGER NOT NULL, 
	cost_usd FLOAT, 
	calls INTEGER NOT NULL, 
	cached_calls INTEGER NOT NULL, 
	latency_ms FLOAT NOT NULL, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_steps_episode_index UNIQUE (episode_id, step_index), 
	FOREIGN KEY(episode_id) REFERENCES episodes (id) ON DELETE CASCADE
);
INSERT INTO steps VALUES(1,'ep-submitted',0,'get_patient','{"patient_id": "P1"}','{"id": "P1", "priority": 3}',0,NULL,NULL,NULL,'[]','a1',120,30,0.0020000000000000000416,2,1,12.5,'2026-11-30 09:00:01.123456');
INSERT INTO steps VALUES(2,'ep-submitted',1,'set_priority','{"patient_id": "P1", "priority": 1}','{"ok": true}',0,'{"ok": true, "previous": 3}','{"kind": "implicit", "label": "drop_fields", "detail": "/previous"}',NULL,'[{"op": "replace", "path": "/patients/0/priority", "value": 1}]','b2',200,40,NULL,1,0,30.0,'2026-11-30 09:00:02.123456');
INSERT INTO steps VALUES(3,'ep-submitted',2,'list_patients','{}','{"error": {"type": "http_500", "message": "upstream"}}',1,NULL,'{"kind": "explicit", "label": "http_500", "detail": ""}',NULL,'[]','b2',0,0,NULL,0,0,0.0,'2026-11-30 09:00:03.123456');
INSERT INTO steps VALUES(4,'ep-open',0,'inspect','{"crate": 4}',NULL,1,NULL,NULL,'invalid arguments for ''inspect'': crate: 4 is not of type ''string''','[]','',0,0,NULL,0,0,0.0,'2026-11-30 09:06:00.123456');
CREATE TABLE judgments (
	id INTEGER NOT NULL, 
	episode_id VARCHAR(64) NOT NULL, 
	verdict JSON NOT NULL, 
	judge_model VARCHAR(300), 
	prompt_version VARCHAR(100), 
	score FLOAT, 
	passed BOOLEAN, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(episode_id) REFERENCES episodes (id) ON DELETE CASCADE
);
INSERT INTO judgments VALUES(1,'ep-submitted','{"score": 0.75, "passed": true, "items": [{"id": "a", "met": true}]}','scripted/judge','v1',0.75,1,'2026-12-01 14:59:46.374347');
CREATE INDEX ix_episodes_tenant ON episodes (tenant);
CREATE INDEX ix_episodes_status_updated ON episodes (status, updated_at);
CREATE INDEX ix_judgments_episode ON judgments (episode_id);
COMMIT;
