//! A managed Tarantool: kvlab writes a small Lua init into its temporary
//! directory that applies every `--server-opt KEY=VALUE` as a `box.cfg` key
//! (`memory-mb` becomes `memtx_memory`), remembers the engine of kvlab's space
//! (`engine=memtx|vinyl`), grants the loopback guest (or, with `password=`,
//! creates kvlab's user) and only then listens.

use std::collections::BTreeMap;
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::Tarantool;
use crate::driver::settings::{bad_number, mib_for, refuse_own, shown, with_defaults};
use crate::driver::{Config, Launch, Login, Server, Sizing};

/// Settings kvlab sets itself on a managed Tarantool.
const OWN: &[&str] = &["listen", "work_dir", "background", "pid_file"];

/// The user kvlab creates when the server gets a password.
const USER: &str = "kvlab";

/// The init script: `box.cfg` from its `KEY=VALUE` arguments.
const INIT: &str = r#"-- kvlab's managed Tarantool: box.cfg from KEY=VALUE arguments.
local cfg, engine, password = {}, 'memtx', nil
for _, a in ipairs(arg) do
    local k, v = a:match('^([^=]+)=(.*)$')
    if k == 'kvlab_engine' then engine = v
    elseif k == 'kvlab_password' then password = v
    elseif k then
        if v == 'true' then v = true elseif v == 'false' then v = false
        elseif tonumber(v) ~= nil then v = tonumber(v) end
        cfg[k] = v
    end
end
local listen = cfg.listen
cfg.listen = nil
box.cfg(cfg)
if password then
    box.schema.user.create('kvlab', {password = password, if_not_exists = true})
    box.schema.user.grant('kvlab', 'super', nil, nil, {if_not_exists = true})
else
    box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
end
rawset(_G, 'kvlab_engine', engine)
box.cfg{listen = listen}
"#;

impl Server for Tarantool {
    fn configure(&self, opts: &BTreeMap<String, String>, sizing: Sizing) -> Result<Config> {
        let mut config = Config::default();
        let memory = mib_for(sizing.data_bytes, 256).to_string();
        let given = with_defaults(opts, [("memory-mb", memory)]);
        for (k, v) in &given {
            let key = k.trim_start_matches("--");
            refuse_own(k, key, OWN)?;
            let (name, value) = match key {
                "memory-mb" => {
                    let mb: u64 = v.parse().map_err(|_| bad_number(k, v))?;
                    ("memtx_memory".to_string(), (mb << 20).to_string())
                }
                "engine" => {
                    if v != "memtx" && v != "vinyl" {
                        bail!(
                            "--server-opt engine={v}: kvlab's space is memtx or vinyl; give engine=memtx or engine=vinyl"
                        );
                    }
                    ("kvlab_engine".to_string(), v.clone())
                }
                "password" => {
                    config.password = Some(v.clone());
                    ("kvlab_password".to_string(), v.clone())
                }
                _ => (key.to_string(), v.clone()),
            };
            config.args.push(format!("{name}={value}"));
            let recorded = if name.starts_with("kvlab_") {
                key
            } else {
                &name
            };
            config
                .settings
                .insert(recorded.to_string(), shown(recorded, &value));
        }
        Ok(config)
    }

    fn command(&self, l: &Launch<'_>) -> Result<(Command, Login)> {
        let init = l.dir.join("init.lua");
        std::fs::write(&init, INIT).context("cannot write the Tarantool init script")?;
        let mut cmd = Command::new(l.binary);
        cmd.arg(&init)
            .arg(match l.socket {
                Some(path) => format!("listen=unix/:{}", path.display()),
                None => format!("listen=127.0.0.1:{}", l.port),
            })
            .arg(format!("work_dir={}", l.dir.display()));
        let login = Login {
            user: l.config.password.as_ref().map(|_| USER.to_string()),
            ..Login::default()
        };
        Ok((cmd, login))
    }
}

#[cfg(test)]
mod tests {
    use super::super::TARANTOOL;
    use super::*;

    #[test]
    fn maps_settings_to_box_cfg() {
        let mut o = BTreeMap::new();
        o.insert("memory-mb".to_string(), "64".to_string());
        o.insert("engine".to_string(), "vinyl".to_string());
        o.insert("readahead".to_string(), "65536".to_string());
        o.insert("password".to_string(), "pw".to_string());
        let c = TARANTOOL.configure(&o, Sizing::default()).unwrap();
        assert!(c.args.contains(&"memtx_memory=67108864".to_string()));
        assert!(c.args.contains(&"kvlab_engine=vinyl".to_string()));
        assert!(c.args.contains(&"readahead=65536".to_string()));
        assert_eq!(c.settings["password"], "***");
        assert_eq!(c.settings["engine"], "vinyl");
        assert_eq!(c.password.as_deref(), Some("pw"));
        o.insert("engine".into(), "sophia".into());
        assert!(TARANTOOL.configure(&o, Sizing::default()).is_err());
        o.remove("engine");
        o.insert("listen".into(), "1".into());
        assert!(TARANTOOL.configure(&o, Sizing::default()).is_err());
    }
}
