//! `kcache-bench-counted`: the bench's counting process. It runs one row's client to its initial
//! sync and prints the heap bytes the client holds (`client KEY --url U [--kubeconfig P] --pods
//! N`), runs a soak client (`soak-client KEY ...`, sampling its heap), or weighs decoded pods (`floor-bytes --seed S --pods N --shape SHAPE`). Its global allocator counts every byte, which
//! costs time: nothing timed in the bench's table comes from this process.

use kcache_bench::{alloc, cli, clients, floor, soak_client};

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

fn main() {
    let args = cli::parse_or_exit();
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(args: &cli::Args) -> Result<(), Box<dyn std::error::Error>> {
    if args.floor_bytes {
        let bytes = floor::bytes(args.shape(), args.seed, args.pods)?;
        println!("{}", bytes.to_line());
        return Ok(());
    }
    if let Some(key) = &args.soak_client {
        let target = clients::Target {
            url: args.url.clone(),
            kubeconfig: args.kubeconfig.clone(),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        return runtime.block_on(soak_client::run(
            soak_client::soak_row_of(key)?,
            &target,
            std::time::Duration::from_secs_f64(args.interval),
            alloc::current,
        ));
    }
    let key = args
        .client
        .as_deref()
        .ok_or("kcache-bench-counted: expected `client KEY` or `floor-bytes`")?;
    let row = clients::row_of(key)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let target = clients::Target {
        url: args.url.clone(),
        kubeconfig: args.kubeconfig.clone(),
    };
    let counted = runtime.block_on(clients::counted(row, &target, args.pods))?;
    println!("{}", counted.to_line());
    Ok(())
}
